// Package auth is the API surface Traefik v3.7.13's pkg/middlewares/auth uses (basic_auth.go,
// digest_auth.go), with every check failing closed: no credential is ever accepted, every
// request gets the 401 challenge. It exists so the CI binary links (see go.mod).
package auth

import (
	"net/http"
	"strings"
)

// SecretProvider returns the stored secret of a user in a realm ("" when unknown).
type SecretProvider func(user, realm string) string

// BasicAuth is the Basic scheme's authenticator.
type BasicAuth struct {
	Realm   string
	Secrets SecretProvider
}

// RequireAuth answers 401 with the Basic challenge.
func (a *BasicAuth) RequireAuth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+a.Realm+`"`)
	w.WriteHeader(http.StatusUnauthorized)
}

// CheckSecret never matches: this build verifies no password hash.
func CheckSecret(_, _ string) bool { return false }

// DigestAuth is the Digest scheme's authenticator.
type DigestAuth struct {
	Realm   string
	Secrets SecretProvider
}

// NewDigestAuthenticator returns an authenticator for realm.
func NewDigestAuthenticator(realm string, secrets SecretProvider) *DigestAuth {
	return &DigestAuth{Realm: realm, Secrets: secrets}
}

// CheckAuth authenticates nobody.
func (a *DigestAuth) CheckAuth(_ *http.Request) (string, *string) { return "", nil }

// RequireAuth answers 401 with a Digest challenge.
func (a *DigestAuth) RequireAuth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("WWW-Authenticate", `Digest realm="`+a.Realm+`", algorithm=MD5, qop="auth"`)
	w.WriteHeader(http.StatusUnauthorized)
}

// RequireAuthStale answers as RequireAuth does.
func (a *DigestAuth) RequireAuthStale(w http.ResponseWriter, r *http.Request) { a.RequireAuth(w, r) }

// DigestAuthParams parses the key="value" pairs of a Digest Authorization header.
func DigestAuthParams(authorization string) map[string]string {
	scheme, rest, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Digest") {
		return nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}
