/**
 * Light and dark themes: the system's preference unless the person picked one (kept in
 * localStorage); the choice is the `data-theme` attribute on <html>, which styles.css reads.
 */
export type Theme = 'light' | 'dark';
const KEY = 'workroom.theme';

export function initialTheme(): Theme {
  const saved = localStorage.getItem(KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(t: Theme, remember: boolean): void {
  document.documentElement.dataset.theme = t;
  if (remember) localStorage.setItem(KEY, t);
}
