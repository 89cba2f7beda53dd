import { defineConfig } from 'vite'

// `vite build -c widget/vite.config.ts` (npm run build:widget, in `npm run build`) builds the
// storefront widget, one module script that defines <shop-points>, into widget/dist/widget.js
// (git-ignored), which the service serves at /storefront/widget.js (src/routes/storefront-widget.ts).
// Everything is in that one file: a shop's page loads nothing else from us.
export default defineConfig({
  root: 'widget',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    lib: { entry: 'src/widget.tsx', formats: ['es'], fileName: () => 'widget.js' },
    minify: true,
  },
})
