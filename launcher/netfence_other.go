//go:build !linux

package launcher

import "errors"

// prohibitRoutes: network namespaces are Linux's.
func prohibitRoutes([]string) error { return errors.New("routes in a sandbox's network need Linux") }
