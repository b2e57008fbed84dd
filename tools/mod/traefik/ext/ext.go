// Package ext is the extension point Traefik's dynamic configuration inlines (see go.mod).
package ext

// HTTP is inlined into dynamic.HTTPConfiguration.
type HTTP struct{}

// Router is inlined into dynamic.Router.
type Router struct{}
