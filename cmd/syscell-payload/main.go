// Command syscell-payload plays the payload of the supervised mechanisms
// of syscell bench mech (package bench/mech), which starts it: it is
// linked dynamically, as syscell is not, so that the loader loads the
// audit library into it and libc's syscall() is there to call.
package main

import (
	"fmt"
	"os"

	"github.com/syscell/syscell/bench/mech"
)

// main runs only when the payload was not asked for: bench/mech plays it
// from its init when PayloadEnv is set.
func main() {
	fmt.Fprintf(os.Stderr, "syscell-payload: only syscell bench mech runs this, with %s set\n", mech.PayloadEnv)
	os.Exit(2)
}
