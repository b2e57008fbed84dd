// Recreated: Traefik v3.7.13's go.mod replaces github.com/traefik/traefik/dynamic/ext with
// ./pkg/config/dynamic/ext, a nested module the module zip leaves out (a directory with its own
// go.mod is not part of the enclosing module). Upstream's two types carry no fields in the
// open-source build: pkg/config/dynamic/http_config.go inlines them, zz_generated.deepcopy.go copies
// them by value (out.HTTP = in.HTTP), and nothing else in the module names them.
module github.com/traefik/traefik/dynamic/ext

go 1.26.0
