// Ours, not upstream's: a build-only stand-in for Traefik's fork github.com/containous/go-http-auth,
// which the module proxy serves at no version (403, 2026-12-06). Upstream github.com/abbot/go-http-auth
// lacks the fork's DigestAuth.RequireAuthStale, which Traefik v3.7.13 calls
// (pkg/middlewares/auth/digest_auth.go), so it does not compile in its place. Only Traefik's
// BasicAuth and DigestAuth middlewares import this package; the inference gateway uses neither, and
// in the CI binary both refuse every request (fail closed): see auth.go.
module github.com/abbot/go-http-auth

go 1.26.0
