// Command syscell compiles, inspects, evaluates, converts, measures and
// benchmarks seccomp policies and programs.
//
// Exit codes: 0 when all went well, 1 for a failure at run time, 2 for bad
// input (a bad policy, program, flag or argument). Errors are printed as
// "syscell: FILE:LINE: problem" where a place is known.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
)

// version is set at link time by the Makefile.
var version = "devel"

func main() {
	// The benchmark re-executes this binary to install a filter in a
	// child; the child must not get as far as the command line.
	filter.MaybeRunChild()
	// syscell run re-executes this binary to start CMD under its filter.
	enforce.MaybeRunShim()
	// Called as syscell-runtime, the binary is an OCI runtime alone.
	maybeRunRuntime()
	os.Exit(run())
}

// run executes the command line in os.Args and returns the exit code.
func run() int {
	err := rootCommand(os.Args[1:]...).Execute()
	if err == nil {
		return 0
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	fmt.Fprintf(os.Stderr, "syscell: %v\n", err)
	return exitCode(err)
}

// badInput marks an error caused by what the user gave: a file, a flag or
// an argument. It exits with status 2.
type badInput struct{ err error }

func (e badInput) Error() string { return e.err.Error() }
func (e badInput) Unwrap() error { return e.err }

// inputErrorf is fmt.Errorf for bad input.
func inputErrorf(format string, args ...any) error {
	return badInput{fmt.Errorf(format, args...)}
}

func exitCode(err error) int {
	var bad badInput
	var perr *policy.Error
	if errors.As(err, &bad) || errors.As(err, &perr) {
		return 2
	}
	return 1
}

// subcommands are syscell's commands, by the word that names each.
var subcommands = []struct {
	name  string
	build func() *cobra.Command
}{
	{"compile", compileCommand}, {"disasm", disasmCommand}, {"eval", evalCommand},
	{"convert", convertCommand}, {"measure", measureCommand}, {"bench", benchCommand},
	{"export", exportCommand}, {"version", versionCommand}, {"run", runCommand},
	{"record", recordCommand}, {"infer", inferCommand}, {"score", scoreCommand},
	{"diff", diffCommand}, {"oci", ociCommand}, {"supervise", superviseCommand},
}

// rootCommand is syscell's command line for the arguments args. It builds
// only the subcommand their first word names: building every command and
// formatting its flags' defaults takes a tenth of a millisecond, at the
// start of every syscell run. Any other first word (none, a flag, help,
// a mistyped command) gets every command, for help and suggestions.
func rootCommand(args ...string) *cobra.Command {
	root := &cobra.Command{
		Use:   "syscell",
		Short: "An optimizing seccomp-bpf compiler and toolkit",
		Long: `syscell compiles seccomp policies (syscell TOML or OCI/Docker JSON) into
small, fast seccomp-bpf programs, and inspects, evaluates, converts, measures
and benchmarks policies and programs.

Exit status: 0 on success, 1 on a failure at run time, 2 on bad input.`,
		Args:          unknownCommand,
		RunE:          missingCommand,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, sub := range subcommands {
		if len(args) > 0 && sub.name == args[0] {
			root.AddCommand(sub.build())
			return root
		}
	}
	for _, sub := range subcommands {
		root.AddCommand(sub.build())
	}
	return root
}

// unknownCommand rejects words that name no subcommand of a command that
// only groups others.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return inputErrorf("unknown command %q (see %s --help)", args[0], cmd.CommandPath())
	}
	return nil
}

// missingCommand is what a command that only groups others does when run
// alone.
func missingCommand(cmd *cobra.Command, _ []string) error {
	return inputErrorf("missing command (see %s --help)", cmd.CommandPath())
}

// needCommand accepts the arguments of a command that runs or reads a
// program, CMD [ARGS...]: at least one.
func needCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return inputErrorf("usage: %s", cmd.UseLine())
	}
	return nil
}

// exactArgs accepts exactly the positional arguments named in the command's
// usage line, as bad input otherwise.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return inputErrorf("usage: %s", cmd.UseLine())
		}
		return nil
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print syscell's version",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "syscell %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
