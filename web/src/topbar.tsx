import type { Shell } from './app';

/** The bar above every screen: navigation, theme switch, who is signed in, sign-out. */
export function TopBar(props: {
  shell: Shell;
  here: 'chat' | 'admin';
  navOpen?: boolean;
  toggleNav?: () => void;
  /** Opens the account dialog (password, sign out everywhere). */
  account?: () => void;
}) {
  const { shell } = props;
  const other = props.here === 'chat' ? { to: '/admin', label: 'Admin' } : { to: '/', label: 'Chat' };
  return (
    <header class="topbar">
      {props.toggleNav && (
        <button
          type="button"
          class="menu"
          aria-expanded={props.navOpen}
          aria-controls="sidebar"
          onClick={props.toggleNav}
        >
          <span aria-hidden="true">☰</span>
          <span class="sr-only">Conversations</span>
        </button>
      )}
      <span class="brand">Workroom</span>
      <nav aria-label="Screens" class="screens">
        <a
          href={other.to}
          onClick={(e) => {
            e.preventDefault();
            shell.navigate(other.to);
          }}
        >
          {other.label}
        </a>
      </nav>
      {/* The button names the theme it switches to (its icon alone at phone width). */}
      <button
        type="button"
        class="theme"
        onClick={shell.toggleTheme}
        aria-label={shell.theme === 'dark' ? 'Light theme' : 'Dark theme'}
        title={shell.theme === 'dark' ? 'Switch to the light theme' : 'Switch to the dark theme'}
      >
        <span class="icon" aria-hidden="true">
          {shell.theme === 'dark' ? '☀' : '☾'}
        </span>
        <span class="label" aria-hidden="true">
          {shell.theme === 'dark' ? 'Light theme' : 'Dark theme'}
        </span>
      </button>
      {props.account ? (
        <button
          type="button"
          class="who link"
          title={`${shell.session.user.email}: your account`}
          onClick={props.account}
        >
          {shell.session.user.display_name}
        </button>
      ) : (
        <span class="who" title={shell.session.user.email}>
          {shell.session.user.display_name}
        </span>
      )}
      <button type="button" onClick={shell.signOut}>
        Sign out
      </button>
    </header>
  );
}
