// Package atomicfile writes a file so that readers see either the old or the new content.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to a temp file in path's directory and renames it over path.
// The temp name starts with "." and ends in ".tmp" so that directory scanners that
// pick files by extension (containerd's CDI cache takes *.yaml and *.json) skip it.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(name, path)
}
