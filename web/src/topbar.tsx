import type { Shell } from './app';

/** The bar above every screen: navigation, theme switch, who is signed in, sign-out. */
export function TopBar(props: {
  shell: Shell;
  here: 'chat' | 'admin';
  navOpen?: boolean;
  toggleNav?: () => void;
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
      <button
        type="button"
        class="theme"
        aria-pressed={shell.theme === 'dark'}
        onClick={shell.toggleTheme}
        title="Switch between light and dark"
      >
        <span class="icon" aria-hidden="true">
          ☾
        </span>
        <span class="label">Dark theme</span>
      </button>
      <span class="who" title={shell.session.user.email}>
        {shell.session.user.display_name}
      </span>
      <button type="button" onClick={shell.signOut}>
        Sign out
      </button>
    </header>
  );
}
