// The console's shell: the token, the health banner, the pages (hash routes), the nav.

import { byId, h, render } from './dom.js';
import { ApiError, describeError, onApiError } from './api.js';
import { forgetToken, hasToken, setToken } from './session.js';
import { clock } from './format.js';
import { onHealth, watchHealth } from './health.js';
import { listNamespaces } from './namespaces.js';
import { notice } from './widgets.js';
import { fleetPage } from './pages/fleet.js';
import { dependencyPage } from './pages/dependency.js';
import { policiesPage } from './pages/policies.js';
import { deadLettersPage } from './pages/dead-letters.js';
import { auditPage } from './pages/audit.js';

const main = byId('main');
const PAGES = {
  fleet: fleetPage,
  deps: dependencyPage,
  policies: policiesPage,
  'dead-letters': deadLettersPage,
  audit: auditPage,
};
let unmount = () => {};
let signInMessage = null;
/** False while a token is being checked at sign-in: its 401 is shown there, not as a sign-out. */
let signedIn = hasToken();

/** `#/deps/shop/payments-api` → `{ page: 'deps', params: ['shop', 'payments-api'] }`. */
function route() {
  const [page, ...params] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { page: PAGES[page] ? page : 'fleet', params: params.filter(Boolean) };
}

export function navigate(...segments) {
  location.hash = `#/${segments.map(encodeURIComponent).join('/')}`;
}

function showPage() {
  unmount();
  unmount = () => {};
  if (!hasToken()) return showSignIn();
  const { page, params } = route();
  byId('nav').hidden = false;
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === `#/${page}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  renderSession();
  const container = h('div', { class: `page page-${page}` });
  render(main, container);
  unmount = PAGES[page](container, params, { navigate }) ?? (() => {});
}

function renderSession() {
  render(
    byId('session'),
    hasToken() ? h('button', { type: 'button', class: 'link', onclick: () => signOut(null) }, 'Forget token') : null,
  );
}

function signOut(message) {
  signedIn = false;
  forgetToken();
  signInMessage = message;
  showPage();
}

function showSignIn() {
  byId('nav').hidden = true;
  renderSession();
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const status = h('div', { 'aria-live': 'polite' });
  if (signInMessage) render(status, notice('error', signInMessage));
  const submit = async (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    render(status, notice('info', 'Checking the token…'));
    try {
      await listNamespaces();
      signedIn = true;
      signInMessage = null;
      showPage();
    } catch (error) {
      forgetToken();
      render(status, notice('error', describeError(error)));
      input.focus();
    }
  };
  render(
    main,
    h(
      'form',
      { class: 'sign-in', onsubmit: submit },
      h('h1', {}, 'Sluice console'),
      h('p', {}, 'Enter an admin token. It stays in this browser tab (sessionStorage) until the tab closes.'),
      h('div', { class: 'field' }, h('label', { for: 'token' }, 'Admin token'), input),
      h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
      status,
    ),
  );
  input.focus();
}

function showHealth(health) {
  const banner = byId('banner');
  const problems = [];
  if (health.coordinator !== 'ok') problems.push('The coordinator does not answer');
  else if (health.store !== 'ok') problems.push('The coordinator’s store (Redis) is unavailable');
  if (health.overloaded) problems.push('The coordinator is overloaded and sheds requests');
  document.body.classList.toggle('degraded', problems.length > 0);
  banner.hidden = problems.length === 0;
  render(
    banner,
    problems.length === 0
      ? null
      : `${problems.join('; ')}. Numbers on this page are from ${clock(health.lastGoodAt)} or earlier and are not current; actions may fail.`,
  );
}

onApiError((error) => {
  if (error instanceof ApiError && error.status === 401 && signedIn) {
    signOut('The coordinator no longer accepts this token (401 unauthorized). Enter a valid admin token.');
  }
});
onHealth(showHealth);
watchHealth();
window.addEventListener('hashchange', showPage);
showPage();
