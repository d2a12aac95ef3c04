// Momor console: who is signed in, and the one way the page calls the API (issue 26).
//
// A person signs in with the deployment's Cognito user pool, or with a Momor API key:
// - "code" (deployed): Cognito's hosted sign-in page, authorization-code flow with PKCE. The page
//   makes a verifier, sends its SHA-256 challenge to /oauth2/authorize, and exchanges the code it is
//   sent back with for tokens at /oauth2/token itself, with the verifier (no client secret: a page
//   cannot keep one). The code is wiped from the address bar before anything else happens.
// - "password" (development: moto's Cognito has no hosted page): InitiateAuth USER_PASSWORD_AUTH,
//   sent straight to the user-pool emulator.
// - an API key, as before.
// Tokens and keys live in this tab's session storage only (no cookie, no local storage, never a URL)
// and go only to this deployment's API, as `Authorization: Bearer`.
"use strict";

window.MomorAuth = (function () {
  const API_KEY = "momor.apiKey";
  const SESSION = "momor.session";
  const PKCE = "momor.pkce";
  let config = { apiKey: true, cognito: null };

  // ------------------------------------------------------------------------------ stored credential
  const session = () => JSON.parse(sessionStorage.getItem(SESSION) || "null");
  const apiKey = () => sessionStorage.getItem(API_KEY);
  const signedIn = () => Boolean(session() || apiKey());
  const kind = () => (session() ? "session" : apiKey() ? "apiKey" : null);

  function keepTokens(answer, flow, previous) {
    // Cognito sends no new refresh token when one is used: the old one stays good.
    sessionStorage.setItem(SESSION, JSON.stringify({
      flow,
      accessToken: answer.accessToken,
      refreshToken: answer.refreshToken || (previous && previous.refreshToken) || null,
      expiresAt: Date.now() + 1000 * (Number(answer.expiresIn) || 3600),
    }));
    sessionStorage.removeItem(API_KEY);
  }

  function useApiKey(key) {
    sessionStorage.removeItem(SESSION);
    sessionStorage.setItem(API_KEY, key);
  }

  function forget() {
    sessionStorage.removeItem(SESSION);
    sessionStorage.removeItem(API_KEY);
    sessionStorage.removeItem(PKCE);
  }

  // ------------------------------------------------------------------------------ configuration
  async function loadConfig() {
    try {
      const response = await fetch("console/config", { cache: "no-store" });
      if (response.ok) config = await response.json();
    } catch (error) {
      // An older deployment without the route: API keys only, as before.
    }
    return config;
  }

  // ------------------------------------------------------------------------------ password (development)
  async function cognitoCall(target, body) {
    const c = config.cognito;
    const response = await fetch(c.endpoint + "/", {
      method: "POST",
      headers: { "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "AWSCognitoIdentityProviderService." + target },
      body: JSON.stringify(body),
      cache: "no-store",
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(answer.message || answer.__type || "Sign-in failed (" + response.status + ").");
      error.status = response.status;
      throw error;
    }
    return answer.AuthenticationResult || {};
  }

  async function signInWithPassword(username, password) {
    const result = await cognitoCall("InitiateAuth", { AuthFlow: "USER_PASSWORD_AUTH", ClientId: config.cognito.clientId,
      AuthParameters: { USERNAME: username, PASSWORD: password } });
    if (!result.AccessToken) throw new Error("This account needs a step the console cannot take here (a new password or MFA).");
    keepTokens({ accessToken: result.AccessToken, refreshToken: result.RefreshToken, expiresIn: result.ExpiresIn },
      "password");
  }

  // ------------------------------------------------------------------------------ hosted page, PKCE
  function base64url(bytes) {
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  const random = (n) => base64url(crypto.getRandomValues(new Uint8Array(n)));
  // Where Cognito sends the person back: this page, as the app client lists it (no query, no hash).
  const redirectUri = () => location.origin + location.pathname;

  async function startHostedSignIn() {
    const c = config.cognito;
    const verifier = random(48);  // 64 characters, inside RFC 7636's 43 to 128
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
    const state = random(24);
    sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state }));
    const url = new URL(c.domain + "/oauth2/authorize");
    url.search = new URLSearchParams({ response_type: "code", client_id: c.clientId, redirect_uri: redirectUri(),
      scope: c.scopes, state, code_challenge: base64url(new Uint8Array(digest)), code_challenge_method: "S256" });
    location.assign(url.toString());
  }

  // Back from the hosted page with ?code=&state= (or ?error=): true when a sign-in was completed.
  async function finishHostedSignIn() {
    const params = new URLSearchParams(location.search);
    if (!config.cognito || config.cognito.flow !== "code" || !(params.has("code") || params.has("error"))) return false;
    history.replaceState(null, "", location.pathname);  // the code leaves the address bar and the history
    const saved = JSON.parse(sessionStorage.getItem(PKCE) || "null");
    sessionStorage.removeItem(PKCE);
    if (params.has("error")) throw new Error(params.get("error_description") || params.get("error"));
    if (!saved || saved.state !== params.get("state")) {
      throw new Error("That sign-in answer was not for this tab's request. Sign in again.");
    }
    const answer = await tokenEndpoint({ grant_type: "authorization_code", client_id: config.cognito.clientId,
      code: params.get("code"), redirect_uri: redirectUri(), code_verifier: saved.verifier });
    keepTokens(answer, "code");
    return true;
  }

  async function tokenEndpoint(form) {
    const response = await fetch(config.cognito.domain + "/oauth2/token", {
      method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form), cache: "no-store",
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok || !answer.access_token) {
      throw new Error("Sign-in could not be completed (" + (answer.error || response.status) + "). Sign in again.");
    }
    return { accessToken: answer.access_token, refreshToken: answer.refresh_token, expiresIn: answer.expires_in };
  }

  // ------------------------------------------------------------------------------ refresh, sign out
  async function refresh() {
    const s = session();
    if (!s || !s.refreshToken || !config.cognito) return false;
    try {
      if (s.flow === "code") {
        keepTokens(await tokenEndpoint({ grant_type: "refresh_token", client_id: config.cognito.clientId,
          refresh_token: s.refreshToken }), "code", s);
      } else {
        const r = await cognitoCall("InitiateAuth", { AuthFlow: "REFRESH_TOKEN_AUTH", ClientId: config.cognito.clientId,
          AuthParameters: { REFRESH_TOKEN: s.refreshToken } });
        keepTokens({ accessToken: r.AccessToken, refreshToken: r.RefreshToken, expiresIn: r.ExpiresIn }, "password", s);
      }
      return true;
    } catch (error) {
      return false;
    }
  }

  async function bearer() {
    const s = session();
    if (s) {
      if (s.expiresAt - Date.now() < 60000) await refresh();  // a minute before it runs out
      return session().accessToken;
    }
    return apiKey();
  }

  // After the tab forgets the tokens, the hosted page's own session ends too (else "Sign in" would
  // sign the same person straight back in).
  function signOut() {
    const s = session();
    forget();
    if (s && s.flow === "code" && config.cognito && config.cognito.flow === "code") {
      const url = new URL(config.cognito.domain + "/logout");
      url.search = new URLSearchParams({ client_id: config.cognito.clientId, logout_uri: redirectUri() });
      location.assign(url.toString());
      return true;
    }
    return false;
  }

  // ------------------------------------------------------------------------------ the API
  // One call to this deployment: JSON in and out, the caller's credential, one refresh on a 401 of
  // a session. A refusal throws an Error with the problem document's detail and the status.
  async function api(path, options) {
    const opts = options || {};
    let response = await send(path, opts);
    if (response.status === 401 && session() && await refresh()) response = await send(path, opts);
    const body = response.status === 204 ? {} : await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(body.detail || (body.error && body.error.message)
        || "The request failed (" + response.status + ").");
      error.status = response.status;
      throw error;
    }
    return body;
  }

  async function send(path, opts) {
    const headers = { Authorization: "Bearer " + await bearer() };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(path, { method: opts.method || "GET", headers, cache: "no-store",
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  }

  return { loadConfig, config: () => config, signedIn, kind, useApiKey, forget, signInWithPassword,
    startHostedSignIn, finishHostedSignIn, signOut, api };
})();
