// A real OAuth 2.1 authorization server for the identity tests (tests/test_proxy_auth.py):
// oidc-provider, the certified OpenID provider, on loopback. Two issuers are started that
// share one key ring (as tenants of one multi-tenant provider do), so that a token of the
// second is correctly signed and must still be refused by a proxy trusting only the first.
//
//   node authorization_server.mjs
//
// prints one JSON line, {"issuers": [A, B]}, once both listen. Access tokens are JWTs
// (RS256) whose audience is the resource indicator the client asked for (any loopback URL:
// each test's proxy has its own, and another's is "another resource"); the machine clients
// get them with client_credentials:
//   reader  mcp:read              admin  mcp:read mcp:admin
//   noscope profile (no mcp scope) brief  mcp:read, tokens live 1 second
//   opaque  mcp:read, opaque tokens (for introspection)
//   tenant-a, tenant-b  mcp:read, with a `tenant` claim of "acme" and "globex"
//   tenant-evil         mcp:read, its `tenant` claim "acme/../globex" (a directory's attribute
//                       a user could set: what a per-tenant guard setting must refuse)
// and one public client for the authorization code flow with PKCE (a person signs in):
//   pkce-app  token_endpoint_auth_method none, redirect_uri http://127.0.0.1:9/callback
//             (never reached: the test reads the code from the redirect); the provider's
//             development login and consent pages (any login name, any password) are on
// GET /_test/jwks-fetches counts the requests of the JWKS endpoint (the proxy's refreshes).
import http from 'node:http';
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const SCOPES = 'mcp:read mcp:admin';

function privateJwk(type, options, kid, alg) {
  const { privateKey } = crypto.generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

const keys = [
  privateJwk('rsa', { modulusLength: 2048 }, 'rsa-1', 'RS256'),
  // A key of another type under its own kid: a token naming it with alg RS256 is refused.
  privateJwk('ec', { namedCurve: 'P-256' }, 'ec-1', 'ES256'),
];

const secret = (name) => `${name}-secret-0123456789abcdef`;
function machine(client_id, scope) {
  return {
    client_id,
    client_secret: secret(client_id),
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
    scope,
  };
}
const clients = [
  machine('reader', 'mcp:read'),
  machine('admin', SCOPES),
  machine('noscope', 'profile'),
  machine('brief', 'mcp:read'),
  machine('opaque', 'mcp:read'),
  // The proxy's own credentials to introspect opaque tokens.
  machine('introspector', 'mcp:read'),
  machine('tenant-a', 'mcp:read'),
  machine('tenant-b', 'mcp:read'),
  machine('tenant-evil', 'mcp:read'),
  {
    client_id: 'pkce-app',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1:9/callback'],
    token_endpoint_auth_method: 'none',
    scope: SCOPES,
  },
];
const TENANTS = { 'tenant-a': 'acme', 'tenant-b': 'globex', 'tenant-evil': 'acme/../globex' };

async function start() {
  let fetches = 0;
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys },
    scopes: ['openid', 'profile', 'mcp:read', 'mcp:admin'],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: () => true,
        getResourceServerInfo(ctx, indicator, client) {
          if (!indicator.startsWith('http://127.0.0.1:')) throw new errors.InvalidTarget();
          const opaque = client.clientId === 'opaque';
          return {
            scope: SCOPES,
            audience: indicator,
            accessTokenTTL: client.clientId === 'brief' ? 1 : 600,
            accessTokenFormat: opaque ? 'opaque' : 'jwt',
            ...(opaque ? {} : { jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
    },
    // Each tenant client's access tokens carry its tenant, as a directory attribute would.
    extraTokenClaims(ctx, token) {
      const tenant = TENANTS[token.clientId];
      return tenant === undefined ? undefined : { tenant };
    },
    ttl: {
      ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
    },
  });
  provider.on('server_error', (ctx, error) => console.error('server_error', error));
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url === '/_test/jwks-fetches') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ fetches }));
      return;
    }
    if (req.url.startsWith('/jwks')) fetches += 1;
    callback(req, res);
  });
  return issuer;
}

const issuers = [await start(), await start()];
console.log(JSON.stringify({ issuers }));
