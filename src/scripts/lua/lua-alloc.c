/*
 * The capped Lua allocator (lua_Alloc) in wasm, with a cache of small freed blocks (wasm-allocator.ts
 * loads this module).
 *
 * It decides exactly as CappedAllocator (lua-raw.ts): a free always succeeds; growth past the cap, or a
 * large allocation once the invocation's time is up (timeUp), is refused; `used` counts the bytes Lua
 * holds. Every block is one of the instance's own malloc blocks (realloc, free: imported from it).
 *
 * The cache: a freed block of 8 to ALLOC_CACHE_SIZE_MAX bytes is kept on a list of blocks of exactly its
 * size, and the next allocation of that size takes it back, instead of a dlmalloc free and malloc each
 * (about 7 % of a worker's time on RHILEX's sample rule). Lists by exact size, not by size class, because
 * Lua says a block's size when it frees it, and blocks Lua allocated before this allocator was installed
 * have exactly that size, no more. The cache holds at most ALLOC_CACHE_BYTES_MAX bytes; beyond, blocks are
 * freed. A cached block is not counted in `used`: it is free to Lua. A realloc goes to the instance's realloc.
 *
 * No static data and nothing on the C stack, as j2t.c: the module shares the instance's memory, and its
 * state lives in a block the caller allocates there (struct alloc_state), passed to Lua as the allocator's
 * userdata (lua_setallocf).
 *
 * Build: npm run build:wasm (clang --target=wasm32, see scripts/build-wasm.mjs).
 */
typedef unsigned long size_t;

extern void *realloc(void *pointer, size_t size);
extern void free(void *pointer);
extern int timeUp(void);

#define ALLOC_CACHE_SIZE_MIN 8
#define ALLOC_CACHE_SIZE_MAX 256
#define ALLOC_CACHE_BYTES_MAX (512 * 1024)

struct alloc_state {
  double used;
  /* 0: no cap. */
  double max;
  /* An allocation growing Lua's bytes by this much or more asks timeUp first (LARGE_ALLOCATION_BYTES). */
  double large_bytes;
  int refused;
  unsigned cached_bytes;
  /* The first cached block of each size; each block's first word is the next one's address. */
  void *cached[ALLOC_CACHE_SIZE_MAX + 1];
};

unsigned alloc_state_bytes(void) { return sizeof(struct alloc_state); }

static int cacheable(size_t size) { return size >= ALLOC_CACHE_SIZE_MIN && size <= ALLOC_CACHE_SIZE_MAX; }

/* A block of `size` bytes: a cached one, or the instance's malloc. */
static void *take(struct alloc_state *s, size_t size) {
  if (cacheable(size) && s->cached[size] != 0) {
    void *block = s->cached[size];
    s->cached[size] = *(void **)block;
    s->cached_bytes -= size;
    return block;
  }
  return realloc(0, size);
}

/* A freed block of `size` bytes: cached while there is room, otherwise the instance's free. */
static void give(struct alloc_state *s, void *block, size_t size) {
  if (cacheable(size) && s->cached_bytes + size <= ALLOC_CACHE_BYTES_MAX) {
    *(void **)block = s->cached[size];
    s->cached[size] = block;
    s->cached_bytes += size;
    return;
  }
  free(block);
}

/* Lua's lua_Alloc: `old_size` is Lua's type tag when `pointer` is 0 (a new object). */
void *alloc(struct alloc_state *s, void *pointer, size_t old_size, size_t new_size) {
  if (new_size == 0) {
    if (pointer != 0) {
      s->used -= (double)old_size;
      give(s, pointer, old_size);
    }
    return 0;
  }
  double growth = pointer != 0 ? (double)new_size - (double)old_size : (double)new_size;
  double end = s->used + growth;
  int capped = (new_size > old_size && s->max > 0 && end > s->max) || (growth >= s->large_bytes && timeUp());
  void *moved = 0;
  if (!capped) moved = pointer == 0 ? take(s, new_size) : realloc(pointer, new_size);
  if (moved != 0) s->used = end;
  else s->refused = 1;
  return moved;
}

/* Caps Lua's bytes at `max` (0: no cap) and forgets earlier refusals. */
void alloc_limit(struct alloc_state *s, double max) {
  s->max = max;
  s->refused = 0;
}

double alloc_used(struct alloc_state *s) { return s->used; }

int alloc_refused(struct alloc_state *s) { return s->refused; }

/* A new state: `used` bytes held already, no cap, nothing cached; `large_bytes` as CappedAllocator's. */
void alloc_init(struct alloc_state *s, double used, double large_bytes) {
  s->used = used;
  s->max = 0;
  s->large_bytes = large_bytes;
  s->refused = 0;
  s->cached_bytes = 0;
  for (int size = 0; size <= ALLOC_CACHE_SIZE_MAX; size++) s->cached[size] = 0;
}
