import { defineConfig } from 'vite';

// Preact through Vite's own JSX transform (no Babel plugin): the automatic runtime from preact.
export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One entry chunk for the chat; the admin screen is a separate chunk loaded on /admin.
    modulePreload: { polyfill: false },
  },
  server: { proxy: { '/api': { target: 'http://127.0.0.1:3000', ws: true } } },
});
