/*
 * json:J2T of a JSON array, built in the Lua instance's own memory: the text is read where Lua holds it
 * and every table is made with direct calls into the instance's C API (imported from it), so no JS object
 * is made and no value crosses into JS (j2t-wasm.ts loads this module).
 *
 * It takes only what it decodes exactly as JSON.parse followed by LuaBridge.push does, and answers
 * J2T_NOT_TAKEN for anything else, having pushed nothing: the JS path then decodes the text as before.
 * Taken: a top-level array of arrays, objects, ASCII strings without escapes, true/false, and numbers
 * without an exponent of at most 15 digits. Not taken: null (JSON.parse's reviver drops it), escapes
 * and non-ASCII bytes (the JS path reads a Lua string up to a NUL and replaces bad UTF-8), exponents and
 * longer numbers (correct rounding needs more than one division), keys that name array indices (JS
 * orders them first), repeated keys (JSON.parse keeps the first's place and the last's value), more than
 * J2T_CONTAINERS_MAX tables, J2T_KEYS_MAX keys in an object or J2T_DEPTH_MAX levels, and invalid JSON.
 *
 * No static data and nothing on the C stack: the module shares the instance's memory, so all its state
 * lives in a scratch block the caller allocates there (struct scratch), and it is linked with a C stack
 * of 0 bytes at address 0, where a use would trap rather than write over Lua's. A Lua error (out of memory)
 * unwinds through here as a JS exception; nothing needs undoing, the scratch is rewritten each call.
 *
 * Build: npm run build:wasm (clang --target=wasm32, see scripts/build-wasm.mjs).
 */
typedef struct lua_State lua_State;
typedef long long lua_Integer;
typedef unsigned long size_t;

extern void lua_createtable(lua_State *L, int narr, int nrec);
extern const char *lua_pushlstring(lua_State *L, const char *s, size_t len);
extern void lua_pushinteger(lua_State *L, lua_Integer n);
extern void lua_pushnumber(lua_State *L, double n);
extern void lua_pushboolean(lua_State *L, int b);
extern void lua_rawseti(lua_State *L, int index, lua_Integer n);
extern void lua_settable(lua_State *L, int index);
extern int lua_checkstack(lua_State *L, int n);
extern int lua_next(lua_State *L, int index);
extern int lua_type(lua_State *L, int index);
extern const char *lua_tolstring(lua_State *L, int index, size_t *len);
extern double lua_tonumberx(lua_State *L, int index, int *isnum);
extern int lua_toboolean(lua_State *L, int index);
extern void lua_pushnil(lua_State *L);
extern void lua_settop(lua_State *L, int index);

#define LUA_TBOOLEAN 1
#define LUA_TNUMBER 3
#define LUA_TSTRING 4

#define J2T_TAKEN 1
#define J2T_NOT_TAKEN 0
#define J2T_CONTAINERS_MAX 1024
#define J2T_KEYS_MAX 64
#define J2T_DEPTH_MAX 32
#define J2T_DIGITS_MAX 15

#define FLAT_KEYS_MAX 64
#define FLAT_STRING 1
#define FLAT_NUMBER 2
#define FLAT_TRUE 3
#define FLAT_FALSE 4
/* A number of more digits than one division rounds exactly: its text, for JS's Number() (flat-json.ts). */
#define FLAT_NUMBER_TEXT 5
#define FLAT_TEXT_DIGITS_MAX 17

/*
 * What j2t_flat_scan found (where each key and string value sits in the text, as offsets) or
 * j2t_table_scan (as addresses of the Lua strings), and each number's value (flat-json.ts reads it).
 */
struct flat {
  int keys;
  int unused;
  double number[FLAT_KEYS_MAX];
  int key_start[FLAT_KEYS_MAX];
  int key_end[FLAT_KEYS_MAX];
  int kind[FLAT_KEYS_MAX];
  int value_start[FLAT_KEYS_MAX];
  int value_end[FLAT_KEYS_MAX];
};

struct scratch {
  struct flat flat;
  /* lua_tolstring's out-parameter: nothing may live on the C stack. */
  size_t length;
  /* The digits of the number scan_number last read. */
  unsigned digits;
  const unsigned char *text;
  unsigned pos;
  unsigned end;
  unsigned containers;
  /* Elements of each array, keys of each object, in the order they open. */
  int counts[J2T_CONTAINERS_MAX];
  /* The keys of the objects open now, for the repeated-key check: offset and length in the text. */
  unsigned key_at[J2T_DEPTH_MAX][J2T_KEYS_MAX];
  unsigned key_len[J2T_DEPTH_MAX][J2T_KEYS_MAX];
};

unsigned j2t_scratch_bytes(void) { return sizeof(struct scratch); }

/* Where struct flat sits in the scratch block, and its size: the JS side checks both against its layout. */
unsigned j2t_flat_offset(void) { return __builtin_offsetof(struct scratch, flat); }
unsigned j2t_flat_bytes(void) { return sizeof(struct flat); }

static void skip_space(struct scratch *s) {
  while (s->pos < s->end) {
    unsigned char c = s->text[s->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    s->pos++;
  }
}

/* At the opening quote: moves past the closing one; 0 for what is not taken. */
static int scan_string(struct scratch *s) {
  s->pos++;
  while (s->pos < s->end) {
    unsigned char c = s->text[s->pos++];
    if (c == '"') return 1;
    if (c == '\\' || c < 0x20 || c >= 0x80) return 0;
  }
  return 0;
}

/* At the first character of a number: moves past it; 0 for what is not taken. s->digits: how many it has. */
static int scan_number(struct scratch *s, unsigned digits_max) {
  unsigned digits = 0;
  if (s->text[s->pos] == '-') s->pos++;
  if (s->pos >= s->end) return 0;
  unsigned char c = s->text[s->pos];
  if (c == '0') {
    s->pos++;
    digits++;
  } else if (c >= '1' && c <= '9') {
    while (s->pos < s->end && s->text[s->pos] >= '0' && s->text[s->pos] <= '9') {
      s->pos++;
      digits++;
    }
  } else {
    return 0;
  }
  if (s->pos < s->end && s->text[s->pos] == '.') {
    s->pos++;
    unsigned fraction = 0;
    while (s->pos < s->end && s->text[s->pos] >= '0' && s->text[s->pos] <= '9') {
      s->pos++;
      fraction++;
    }
    if (fraction == 0) return 0;
    digits += fraction;
  }
  if (s->pos < s->end) {
    c = s->text[s->pos];
    if (c == 'e' || c == 'E' || (c >= '0' && c <= '9')) return 0;
  }
  s->digits = digits;
  return digits <= digits_max;
}

/* true or false (no string literal: static data would land in the instance's memory). */
static int scan_boolean(struct scratch *s) {
  const unsigned char *t = s->text + s->pos;
  unsigned left = s->end - s->pos;
  if (left >= 4 && t[0] == 't' && t[1] == 'r' && t[2] == 'u' && t[3] == 'e') {
    s->pos += 4;
    return 1;
  }
  if (left >= 5 && t[0] == 'f' && t[1] == 'a' && t[2] == 'l' && t[3] == 's' && t[4] == 'e') {
    s->pos += 5;
    return 1;
  }
  return 0;
}

/* A key JS would order before the others: "0", or up to ten digits without a leading zero. */
static int index_like(const unsigned char *key, unsigned length) {
  if (length == 0 || length > 10) return 0;
  if (key[0] == '0') return length == 1;
  for (unsigned i = 0; i < length; i++) {
    if (key[i] < '0' || key[i] > '9') return 0;
  }
  return 1;
}

static int same_bytes(const unsigned char *a, const unsigned char *b, unsigned length) {
  for (unsigned i = 0; i < length; i++) {
    if (a[i] != b[i]) return 0;
  }
  return 1;
}

static int scan_value(struct scratch *s, unsigned depth);

#define ELEMENT_BAD (-1)
#define ELEMENT_MORE 0
#define ELEMENT_LAST 1

/* At '[' or '{' within the limits: the container's number, s->pos past the opening and its space; else -1. */
static int open_container(struct scratch *s, unsigned depth) {
  if (depth >= J2T_DEPTH_MAX || s->containers >= J2T_CONTAINERS_MAX) return -1;
  s->pos++;
  skip_space(s);
  return (int)s->containers++;
}

/* Moves past `close` when the container is empty. */
static int closed_at_once(struct scratch *s, unsigned char close) {
  if (s->pos >= s->end || s->text[s->pos] != close) return 0;
  s->pos++;
  return 1;
}

/* After an element: past the comma and its space (ELEMENT_MORE), past `close` (ELEMENT_LAST), or ELEMENT_BAD. */
static int after_element(struct scratch *s, unsigned char close) {
  skip_space(s);
  if (s->pos >= s->end) return ELEMENT_BAD;
  unsigned char c = s->text[s->pos++];
  if (c == close) return ELEMENT_LAST;
  if (c != ',') return ELEMENT_BAD;
  skip_space(s);
  return ELEMENT_MORE;
}

/* What a container's elements are: values (an array), members (an object), members of a flat object. */
#define ELEMENTS_OF_ARRAY 0
#define ELEMENTS_OF_OBJECT 1
#define ELEMENTS_OF_FLAT 2

static int scan_member(struct scratch *s, unsigned depth, int count);
static int flat_member(struct scratch *s, struct flat *f, int count);

/* The `count`-th element of a container of `kind` at `depth`: moves past it; 0 for what is not taken. */
static int scan_element(struct scratch *s, int kind, unsigned depth, int count) {
  if (kind == ELEMENTS_OF_ARRAY) return scan_value(s, depth + 1);
  if (kind == ELEMENTS_OF_OBJECT) return scan_member(s, depth, count);
  return flat_member(s, &s->flat, count);
}

/* The elements of the container just opened (s->pos past its opening and space), through `close`: their number, or -1. */
static int scan_elements(struct scratch *s, int kind, unsigned depth, unsigned char close) {
  if (closed_at_once(s, close)) return 0;
  int count = 0;
  for (;;) {
    if (!scan_element(s, kind, depth, count)) return -1;
    count++;
    int next = after_element(s, close);
    if (next != ELEMENT_MORE) return next == ELEMENT_LAST ? count : -1;
  }
}

/* At '[' (ELEMENTS_OF_ARRAY) or '{' (ELEMENTS_OF_OBJECT): moves past the container, its count noted; 0 for what is not taken. */
static int scan_container(struct scratch *s, unsigned depth, int kind, unsigned char close) {
  int self = open_container(s, depth);
  if (self < 0) return 0;
  int count = scan_elements(s, kind, depth, close);
  if (count < 0) return 0;
  s->counts[self] = count;
  return 1;
}

/* One "key": value of an object at `depth` whose `count` keys so far are in key_at/key_len. */
static int scan_member(struct scratch *s, unsigned depth, int count) {
  if (s->pos >= s->end || s->text[s->pos] != '"' || count >= J2T_KEYS_MAX) return 0;
  unsigned key = s->pos + 1;
  if (!scan_string(s)) return 0;
  unsigned length = s->pos - 1 - key;
  if (index_like(s->text + key, length)) return 0;
  for (int k = 0; k < count; k++) {
    if (s->key_len[depth][k] == length && same_bytes(s->text + s->key_at[depth][k], s->text + key, length)) return 0;
  }
  s->key_at[depth][count] = key;
  s->key_len[depth][count] = length;
  skip_space(s);
  if (s->pos >= s->end || s->text[s->pos++] != ':') return 0;
  skip_space(s);
  return scan_value(s, depth + 1);
}

static int scan_value(struct scratch *s, unsigned depth) {
  if (s->pos >= s->end) return 0;
  unsigned char c = s->text[s->pos];
  if (c == '[') return scan_container(s, depth, ELEMENTS_OF_ARRAY, ']');
  if (c == '{') return scan_container(s, depth, ELEMENTS_OF_OBJECT, '}');
  if (c == '"') return scan_string(s);
  if (c == 't' || c == 'f') return scan_boolean(s);
  if (c == '-' || (c >= '0' && c <= '9')) return scan_number(s, J2T_DIGITS_MAX);
  return 0;
}

/* The pushes, over text scan_value accepted: no checks left but the Lua stack's. */

static void push_value(lua_State *L, struct scratch *s);

static void push_string(lua_State *L, struct scratch *s) {
  unsigned start = ++s->pos;
  while (s->text[s->pos] != '"') s->pos++;
  lua_pushlstring(L, (const char *)s->text + start, s->pos - start);
  s->pos++;
}

/* m / 10^k with m < 10^15: both exact doubles, so one division is correctly rounded, as JSON.parse is. */
static void push_number(lua_State *L, struct scratch *s) {
  int negative = s->text[s->pos] == '-';
  if (negative) s->pos++;
  lua_Integer mantissa = 0;
  lua_Integer scale = 1;
  while (s->pos < s->end && s->text[s->pos] >= '0' && s->text[s->pos] <= '9') {
    mantissa = mantissa * 10 + (s->text[s->pos++] - '0');
  }
  if (s->pos < s->end && s->text[s->pos] == '.') {
    s->pos++;
    while (s->pos < s->end && s->text[s->pos] >= '0' && s->text[s->pos] <= '9') {
      mantissa = mantissa * 10 + (s->text[s->pos++] - '0');
      scale *= 10;
    }
  }
  /* An integral value is an integer to LuaBridge.push (Number.isInteger), -0 included. */
  if (mantissa % scale == 0) {
    lua_Integer whole = mantissa / scale;
    lua_pushinteger(L, negative ? -whole : whole);
    return;
  }
  double value = (double)mantissa / (double)scale;
  lua_pushnumber(L, negative ? -value : value);
}

static void push_array(lua_State *L, struct scratch *s) {
  lua_createtable(L, s->counts[s->containers++], 0);
  s->pos++;
  skip_space(s);
  lua_Integer index = 1;
  while (s->text[s->pos] != ']') {
    push_value(L, s);
    lua_rawseti(L, -2, index++);
    skip_space(s);
    if (s->text[s->pos] == ',') s->pos++;
    skip_space(s);
  }
  s->pos++;
}

static void push_object(lua_State *L, struct scratch *s) {
  lua_createtable(L, 0, s->counts[s->containers++]);
  s->pos++;
  skip_space(s);
  while (s->text[s->pos] != '}') {
    push_string(L, s);
    skip_space(s);
    s->pos++;
    skip_space(s);
    push_value(L, s);
    lua_settable(L, -3);
    skip_space(s);
    if (s->text[s->pos] == ',') s->pos++;
    skip_space(s);
  }
  s->pos++;
}

static void push_value(lua_State *L, struct scratch *s) {
  unsigned char c = s->text[s->pos];
  if (c == '[') {
    push_array(L, s);
  } else if (c == '{') {
    push_object(L, s);
  } else if (c == '"') {
    push_string(L, s);
  } else if (c == 't') {
    lua_pushboolean(L, 1);
    s->pos += 4;
  } else if (c == 'f') {
    lua_pushboolean(L, 0);
    s->pos += 5;
  } else {
    push_number(L, s);
  }
}

/*
 * Decodes the `length` bytes at `text` (a Lua string) onto L's stack when it is an array this module
 * takes (J2T_TAKEN, one value pushed); otherwise J2T_NOT_TAKEN and nothing pushed.
 */
int j2t_array(lua_State *L, struct scratch *s, const unsigned char *text, unsigned length) {
  s->text = text;
  s->pos = 0;
  s->end = length;
  s->containers = 0;
  skip_space(s);
  if (s->pos >= s->end || text[s->pos] != '[') return J2T_NOT_TAKEN;
  unsigned start = s->pos;
  if (!scan_container(s, 0, ELEMENTS_OF_ARRAY, ']')) return J2T_NOT_TAKEN;
  skip_space(s);
  if (s->pos != s->end) return J2T_NOT_TAKEN;
  if (!lua_checkstack(L, 2 * J2T_DEPTH_MAX + 4)) return J2T_NOT_TAKEN;
  s->pos = start;
  s->containers = 0;
  push_value(L, s);
  return J2T_TAKEN;
}

/* ---- A flat object's keys and values, for json:J2T's lazy tables and rds:Save (flat-json.ts) ---- */

/* `__proto__`, which JSON.parse makes an own key of but an assignment would not (no static data: no literal). */
static int is_proto(const unsigned char *key, unsigned length) {
  return length == 9 && key[0] == '_' && key[1] == '_' && key[2] == 'p' && key[3] == 'r' && key[4] == 'o' && key[5] == 't' &&
         key[6] == 'o' && key[7] == '_' && key[8] == '_';
}

/* The number scan_number accepted at text[start, end): 0 for minus zero, which the lazy path leaves to JSON.parse. */
static int flat_number(struct flat *f, int slot, const unsigned char *text, unsigned start, unsigned end) {
  int negative = text[start] == '-';
  unsigned at = negative ? start + 1 : start;
  lua_Integer mantissa = 0;
  lua_Integer scale = 1;
  for (; at < end && text[at] != '.'; at++) mantissa = mantissa * 10 + (text[at] - '0');
  if (at < end) {
    for (at++; at < end; at++) {
      mantissa = mantissa * 10 + (text[at] - '0');
      scale *= 10;
    }
  }
  if (negative && mantissa == 0) return 0;
  double value = (double)mantissa / (double)scale;
  f->number[slot] = negative ? -value : value;
  f->kind[slot] = FLAT_NUMBER;
  return 1;
}

static int flat_value(struct scratch *s, struct flat *f, int slot) {
  if (s->pos >= s->end) return 0;
  unsigned start = s->pos;
  unsigned char c = s->text[start];
  if (c == '"') {
    if (!scan_string(s)) return 0;
    f->kind[slot] = FLAT_STRING;
    f->value_start[slot] = (int)start + 1;
    f->value_end[slot] = (int)s->pos - 1;
    return 1;
  }
  if (c == 't' || c == 'f') {
    if (!scan_boolean(s)) return 0;
    f->kind[slot] = c == 't' ? FLAT_TRUE : FLAT_FALSE;
    return 1;
  }
  if (c != '-' && (c < '0' || c > '9')) return 0;
  if (!scan_number(s, FLAT_TEXT_DIGITS_MAX)) return 0;
  if (s->digits <= J2T_DIGITS_MAX) return flat_number(f, slot, s->text, start, s->pos);
  f->kind[slot] = FLAT_NUMBER_TEXT;
  f->value_start[slot] = (int)start;
  f->value_end[slot] = (int)s->pos;
  return 1;
}

static int flat_member(struct scratch *s, struct flat *f, int count) {
  if (s->pos >= s->end || s->text[s->pos] != '"' || count >= FLAT_KEYS_MAX) return 0;
  unsigned key = s->pos + 1;
  if (!scan_string(s)) return 0;
  unsigned length = s->pos - 1 - key;
  if (is_proto(s->text + key, length)) return 0;
  for (int k = 0; k < count; k++) {
    if ((unsigned)(f->key_end[k] - f->key_start[k]) == length && same_bytes(s->text + f->key_start[k], s->text + key, length)) return 0;
  }
  f->key_start[count] = (int)key;
  f->key_end[count] = (int)(key + length);
  skip_space(s);
  if (s->pos >= s->end || s->text[s->pos++] != ':') return 0;
  skip_space(s);
  return flat_value(s, f, count);
}

/*
 * The `length` bytes at `text` as a flat object (flat-json.ts says which it takes): its number of keys,
 * with s->flat filled; -1 for anything else.
 */
int j2t_flat_scan(struct scratch *s, const unsigned char *text, unsigned length) {
  struct flat *f = &s->flat;
  s->text = text;
  s->pos = 0;
  s->end = length;
  skip_space(s);
  if (s->pos >= s->end || text[s->pos] != '{') return -1;
  s->pos++;
  skip_space(s);
  int count = scan_elements(s, ELEMENTS_OF_FLAT, 0, '}');
  if (count < 0) return -1;
  skip_space(s);
  if (s->pos != s->end) return -1;
  f->keys = count;
  return count;
}

/* ---- rds:Save's record table (flat-json.ts) ---- */

/* The value on top of L's stack into slot `slot`; 0 for what is not a string, number or boolean. */
static int table_value(lua_State *L, struct scratch *s, struct flat *f, int slot) {
  int type = lua_type(L, -1);
  if (type == LUA_TNUMBER) {
    f->number[slot] = lua_tonumberx(L, -1, 0);
    f->kind[slot] = FLAT_NUMBER;
    return 1;
  }
  if (type == LUA_TSTRING) {
    const char *value = lua_tolstring(L, -1, &s->length);
    f->value_start[slot] = (int)value;
    f->value_end[slot] = (int)(value + s->length);
    f->kind[slot] = FLAT_STRING;
    return 1;
  }
  if (type == LUA_TBOOLEAN) {
    f->kind[slot] = lua_toboolean(L, -1) ? FLAT_TRUE : FLAT_FALSE;
    return 1;
  }
  return 0;
}

/*
 * The table at `index` (absolute) of L, walked with lua_next as rds:Save's JS walk does: its number of
 * entries, with s->flat holding the addresses of their key strings and string values; -1, and the stack
 * as it was, for a key that is not a string, a value that is not a string, number or boolean, or more
 * than FLAT_KEYS_MAX entries. The strings stay where the table holds them while it is not changed.
 */
int j2t_table_scan(lua_State *L, struct scratch *s, int index) {
  struct flat *f = &s->flat;
  int count = 0;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    if (count >= FLAT_KEYS_MAX || lua_type(L, -2) != LUA_TSTRING || !table_value(L, s, f, count)) {
      lua_settop(L, -3);
      return -1;
    }
    const char *key = lua_tolstring(L, -2, &s->length);
    f->key_start[count] = (int)key;
    f->key_end[count] = (int)(key + s->length);
    count++;
    lua_settop(L, -2);
  }
  f->keys = count;
  return count;
}
