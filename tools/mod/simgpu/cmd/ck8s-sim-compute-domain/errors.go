package main

import "fmt"

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// permanentError marks what upstream does not retry (cmd/compute-domain-kubelet-plugin/driver.go);
// the simulator retries nothing itself, the type only keeps the distinction visible in logs/tests.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }
