// Command syscell-shim is the shim syscell run starts a command through
// under a whole-process policy (package enforce/shim): syscell's own
// binary can play it, but takes longer to start. make build puts it next
// to syscell, where syscell run looks for it.
package main

import (
	"fmt"
	"os"

	"github.com/syscell/syscell/enforce/shim"
)

func main() {
	shim.MaybeRun()
	fmt.Fprintln(os.Stderr, "syscell-shim: syscell run starts this program; it is not run by hand")
	os.Exit(2)
}
