package launcher

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
)

// setParentDeathSignal has the kernel kill the server when toolshelf's
// thread that started it dies. The go runtime never ends a thread that
// has not been locked, so in practice that is when toolshelf dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// Each stdio server starts in a PID namespace of its own, where it is the
// first process. When it exits, or is stopped, the kernel kills every
// process left in the namespace: a daemon it detached (a double fork into
// a session of its own, as `heroku update --autoupdate` does) escapes its
// process group, but not its namespace. A cgroup would do the same but
// needs a delegated hierarchy that a user's toolshelf seldom has; a PID
// namespace needs only a user namespace when toolshelf is not root, which
// most kernels allow. Where neither is allowed, the server runs in its
// process group alone (pidNamespaces says which, for the log).
var noPIDNamespaces atomic.Bool

// setPIDNamespace asks for a PID namespace, with a user namespace that
// maps toolshelf's own user and group to themselves when it is not root.
func setPIDNamespace(a *syscall.SysProcAttr) {
	if noPIDNamespaces.Load() {
		return
	}
	a.Cloneflags = syscall.CLONE_NEWPID
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// namespaceRefused reports whether a start failed because the system
// refuses namespaces; then none is asked for again.
func namespaceRefused(a *syscall.SysProcAttr, err error) bool {
	if a == nil || a.Cloneflags == 0 {
		return false
	}
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES) {
		noPIDNamespaces.Store(true)
		a.Cloneflags, a.UidMappings, a.GidMappings = 0, nil, nil
		return true
	}
	return false
}

// NoPIDNamespaces reports whether the system refused a server its PID
// namespace (servers then run in their process group alone).
func NoPIDNamespaces() bool { return noPIDNamespaces.Load() }
