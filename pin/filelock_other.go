//go:build !unix

package pin

// lockDir does not lock where flock is missing: concurrent saves from
// several processes may then lose pins (docs/reliability.md).
func lockDir(dir string) (unlock func(), err error) { return func() {}, nil }

func syncDir(dir string) {}
