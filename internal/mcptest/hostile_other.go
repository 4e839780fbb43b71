//go:build !linux

package mcptest

import "errors"

var errNotHere = errors.New("the hostile server signals and traces on Linux only")

func signalCont(int) error { return errNotHere }

func ptraceAttach(int) error { return errNotHere }
