import { defineConfig } from 'vite'

// `vite build admin-ui` (in `npm run build`) builds the dashboard into admin-ui/dist/ (git-ignored), which the service
// serves at /admin/ (src/routes/admin-ui.ts). Every file it loads comes from there: no CDN.
export default defineConfig({
  base: '/admin/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // No data: URLs: the page's Content-Security-Policy allows images from 'self' only.
    assetsInlineLimit: 0,
    sourcemap: true,
    target: 'es2022',
  },
})
