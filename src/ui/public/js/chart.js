// Lazy loader of the vendored uPlot (served by us from vendor/, never fetched from elsewhere).
let loading = null;

/** @returns {Promise<any>} the uPlot constructor */
export function loadUPlot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  if (loading) return loading;
  loading = new Promise((resolve, reject) => {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = 'vendor/uPlot.min.css';
    document.head.appendChild(css);
    const s = document.createElement('script');
    s.src = 'vendor/uPlot.iife.min.js';
    s.onload = () => (window.uPlot ? resolve(window.uPlot) : reject(new Error('uPlot missing after load')));
    s.onerror = () => { loading = null; reject(new Error('vendor/uPlot.iife.min.js could not be loaded')); };
    document.head.appendChild(s);
  });
  return loading;
}
