package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/privilege"
)

type diffCmd struct {
	policyFlags
	ranking rankingFlag
	jsonOut bool
}

func diffCommand() *cobra.Command {
	var c diffCmd
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare the syscalls and privilege of two policies' compartments",
		Long: `Compare two files that syscell score reads (in any of its formats, not
necessarily the same): the syscalls each compartment gained and lost, and
how its privilege changed, then the same for the union (P_seccomp), for
the application (P_A) and for the reduction. Compartments are matched by
build-id when both files give one, else by path (a compartment without a
path, such as syso's, by its name); one found in a single file is shown
against "-". The exit status is 0 whether or not the files differ.`,
		Example: `  syscell diff old.toml new.toml
  syscell diff syso.json policy.toml --ranking younis2014 --json`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0], args[1]) },
	}
	c.policyFlags.register(cmd)
	c.ranking.register(cmd)
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print the comparison as JSON")
	return cmd
}

func (c *diffCmd) run(cmd *cobra.Command, oldPath, newPath string) error {
	r, err := c.ranking.load()
	if err != nil {
		return err
	}
	old, err := c.loadAllowlists(cmd, oldPath)
	if err != nil {
		return err
	}
	new, err := c.loadAllowlists(cmd, newPath)
	if err != nil {
		return err
	}
	d := privilege.Compare(old.Score(r), new.Score(r))
	var b bytes.Buffer
	if c.jsonOut {
		err = writeDiffJSON(&b, old, new, d, string(c.ranking))
	} else {
		writeDiff(&b, old, new, d, string(c.ranking))
	}
	if err != nil {
		return err
	}
	return write(cmd.OutOrStdout(), b.Bytes())
}

// writeDiff writes a table of the compartments and the union, each with
// the syscalls it gained (+) and lost (-), then the application's figures.
func writeDiff(w io.Writer, old, new *privilege.Allowlists, d privilege.Diff, rankingName string) {
	fmt.Fprintf(w, "%s -> %s, ranking %s\n\n", describeFile(old), describeFile(new), rankingName)
	rows := append(append([]privilege.Change{}, d.Compartments...), d.Union)
	width := len("compartment")
	for _, c := range rows {
		width = max(width, len(c.Name()))
	}
	fmt.Fprintf(w, "%-*s  %5s  %5s  %6s  %s\n", width, "compartment", "old", "new", "change", "syscalls")
	for _, c := range rows {
		row := fmt.Sprintf("%-*s  %5s  %5s  %+6d  %s", width, c.Name(), privilegeText(c.Old), privilegeText(c.New),
			c.Delta(), changedSyscalls(c))
		fmt.Fprintln(w, strings.TrimRight(row, " ")) // an unchanged compartment lists no syscalls
	}
	fmt.Fprintf(w, "\nP_A        %d -> %d  (%+d)\n", d.Old.App(), d.New.App(), d.New.App()-d.Old.App())
	fmt.Fprintf(w, "P_seccomp  %d -> %d  (%+d)\n", d.Old.Seccomp(), d.New.Seccomp(), d.New.Seccomp()-d.Old.Seccomp())
	fmt.Fprintf(w, "reduction  %.2f%% -> %.2f%%  (%+.2f points)\n", d.Old.Reduction(), d.New.Reduction(),
		d.New.Reduction()-d.Old.Reduction())
}

// privilegeText is a compartment's privilege, or "-" for a file without it.
func privilegeText(s *privilege.Scored) string {
	if s == nil {
		return "-"
	}
	return strconv.Itoa(s.Privilege)
}

// changedSyscalls lists the added syscalls marked "+", then the removed
// ones marked "-".
func changedSyscalls(c privilege.Change) string {
	var parts []string
	for _, name := range c.Added {
		parts = append(parts, "+"+name)
	}
	for _, name := range c.Removed {
		parts = append(parts, "-"+name)
	}
	return strings.Join(parts, " ")
}

// diffJSON is a comparison for machines.
type diffJSON struct {
	Old          string       `json:"old"`
	New          string       `json:"new"`
	Ranking      string       `json:"ranking"`
	Compartments []changeJSON `json:"compartments"`
	Union        changeJSON   `json:"union"`
	App          figureJSON   `json:"application_privilege"`
	Seccomp      figureJSON   `json:"seccomp_privilege"`
	Reduction    figureJSON   `json:"reduction_percent"`
}

// changeJSON is a compartment's change; a privilege is null in a file
// without the compartment.
type changeJSON struct {
	Name    string   `json:"name"`
	Old     *int     `json:"old_privilege"`
	New     *int     `json:"new_privilege"`
	Change  int      `json:"change"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

type figureJSON struct {
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
}

func writeDiffJSON(w io.Writer, old, new *privilege.Allowlists, d privilege.Diff, rankingName string) error {
	out := diffJSON{
		Old:       old.Source,
		New:       new.Source,
		Ranking:   rankingName,
		Union:     changeOf(d.Union),
		App:       figure(float64(d.Old.App()), float64(d.New.App())),
		Seccomp:   figure(float64(d.Old.Seccomp()), float64(d.New.Seccomp())),
		Reduction: figure(d.Old.Reduction(), d.New.Reduction()),
	}
	for _, c := range d.Compartments {
		out.Compartments = append(out.Compartments, changeOf(c))
	}
	return writeJSON(w, out)
}

func changeOf(c privilege.Change) changeJSON {
	return changeJSON{
		Name:    c.Name(),
		Old:     privilegeOf(c.Old),
		New:     privilegeOf(c.New),
		Change:  c.Delta(),
		Added:   append([]string{}, c.Added...), // [] rather than null
		Removed: append([]string{}, c.Removed...),
	}
}

func privilegeOf(s *privilege.Scored) *int {
	if s == nil {
		return nil
	}
	return &s.Privilege
}

func figure(old, new float64) figureJSON { return figureJSON{Old: old, New: new, Change: new - old} }
