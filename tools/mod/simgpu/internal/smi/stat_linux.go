package smi

import "golang.org/x/sys/unix"

// Stat is the real StatFunc: stat(2), following symlinks as opening the node would.
func Stat(path string) (DevInfo, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return DevInfo{}, err
	}
	rdev := uint64(st.Rdev) //nolint:unconvert // Rdev is uint32 on some architectures
	return DevInfo{
		CharDev: st.Mode&unix.S_IFMT == unix.S_IFCHR,
		Major:   unix.Major(rdev),
		Minor:   unix.Minor(rdev),
	}, nil
}
