package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/plot"
	"github.com/syscell/syscell/privilege"
	"github.com/syscell/syscell/ranking"
)

type scoreCmd struct {
	policyFlags
	ranking rankingFlag
	jsonOut bool
	svg     string
}

func scoreCommand() *cobra.Command {
	var c scoreCmd
	cmd := &cobra.Command{
		Use:   "score FILE",
		Short: "Score the privilege of a policy's compartments, as addrfilter's evaluation does",
		Long: `Score the privilege of each compartment of FILE with addrfilter's metric:
a compartment's privilege P_C is the sum of the danger scores (1, 2 or 3, by
--ranking) of the distinct syscalls it may make; the application's, P_A, is
that of its most privileged compartment; P_seccomp is that of the whole
process under one seccomp filter: the union of all compartments and of the
calls made outside them (the rules of a syscell policy, which allow the
loader's start-up calls; syso's "[start-up]"); and the
reduction is (P_seccomp - P_A) / P_seccomp x 100. Each compartment's own
reduction is the same with its P_C for P_A.

FILE is told apart by content: a syscell policy (its compartments, as
written, and its rules for the union), an OCI profile, addrfilter's TOML
whitelist ([files] mapping libraries to x86_64 syscall numbers) or syso's
JSON counts ({"/path": {"nr": count}}). Every key of addrfilter's and syso's
files is a compartment, FAILED included, as syso scored them. A policy
without compartments, an OCI profile among them, is one whole-process
compartment holding the calls its rules may let run; its reduction is 0 %.

A syscell policy with phases (serving-from) is scored in both: all of a
compartment's calls, the bound of its initialisation phase, and its serving
calls (all of them where it lists none), each with its own privilege and
reduction. The union's serving set is the union of the compartments' serving
sets: what one whole-process filter narrowed at the same point must allow
(the rules, the loader's start-up, are not in it). P_A serving is the
serving privilege of the compartment most privileged while serving; the
serving reduction is (P_seccomp - P_A serving) / P_seccomp, against the
filter of the union that a process without phases keeps for its whole run,
and the phased reduction (P_seccomp serving - P_A serving) /
P_seccomp serving, against the whole-process filter narrowed by phase.`,
		Example: `  syscell score policy.toml
  syscell score syso.json --ranking younis2014 --svg privilege.svg
  syscell score whitelist.toml --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.ranking.register(cmd)
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print the scores as JSON")
	cmd.Flags().StringVar(&c.svg, "svg", "", "also draw the scores as a bar chart in `FILE`")
	return cmd
}

func (c *scoreCmd) run(cmd *cobra.Command, path string) error {
	r, err := c.ranking.load()
	if err != nil {
		return err
	}
	a, err := c.loadAllowlists(cmd, path)
	if err != nil {
		return err
	}
	s := a.Score(r)
	if c.svg != "" {
		if err := writeChart(c.svg, s.Chart(string(c.ranking))); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if c.jsonOut {
		err = writeScoreJSON(&b, a, s, string(c.ranking))
	} else {
		writeScore(&b, a, s, string(c.ranking))
	}
	if err != nil {
		return err
	}
	return write(cmd.OutOrStdout(), b.Bytes())
}

// rankingFlag is --ranking: the danger scores the metric sums.
type rankingFlag string

func (f *rankingFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar((*string)(f), "ranking", "default", "the danger scores, `NAME` of "+
		strings.Join(ranking.Names(), " or ")+" (younis2014 is the table addrfilter's evaluation used)")
}

func (f rankingFlag) load() (*ranking.Ranking, error) {
	r, err := ranking.Load(string(f))
	if err != nil {
		return nil, inputErrorf("--ranking: %w", err)
	}
	return r, nil
}

// loadAllowlists reads a file in any format the metric reads. The OCI
// import's warnings go to stderr, as load's do.
func (f *policyFlags) loadAllowlists(cmd *cobra.Command, path string) (*privilege.Allowlists, error) {
	data, bundled, err := readInput(path)
	if err != nil {
		return nil, err
	}
	a, warnings, err := privilege.Parse(path, data, f.ociOptions(cmd))
	if err != nil {
		return nil, fileError(path, err)
	}
	if !bundled {
		warn(cmd, warnings)
	}
	return a, nil
}

// describeFile names a file, its format and its phases for the head of a
// report.
func describeFile(a *privilege.Allowlists) string {
	format := a.Format.String()
	if a.WholeProcess {
		format += ", no compartments: the whole process is one"
	}
	if a.Phased() {
		format += ", serving from " + strings.Join(a.ServingFrom, ", ")
	}
	return fmt.Sprintf("%s (%s)", a.Source, format)
}

// writeScore writes a table of the compartments and the union, then the
// application's figures; with phases, the table has the serving phase's
// columns too, and the serving phase's figures follow.
func writeScore(w io.Writer, a *privilege.Allowlists, s privilege.Score, rankingName string) {
	fmt.Fprintf(w, "%s, ranking %s\n\n", describeFile(a), rankingName)
	rows := append(append([]privilege.Scored{}, s.Compartments...), s.Union)
	width := len("compartment")
	for _, c := range rows {
		width = max(width, len(c.Name))
	}
	const columns = "%8s  %9s  %9s"
	if s.Phased {
		fmt.Fprintf(w, "%-*s  %-30s  %s\n", width, "", "initialisation (all calls)", "serving")
		fmt.Fprintf(w, "%-*s  "+columns+"  "+columns+"\n", width, "compartment",
			"syscalls", "privilege", "reduction", "syscalls", "privilege", "reduction")
	} else {
		fmt.Fprintf(w, "%-*s  "+columns+"\n", width, "compartment", "syscalls", "privilege", "reduction")
	}
	for _, c := range rows {
		fmt.Fprintf(w, "%-*s  %8d  %9d  %8.2f%%", width, c.Name, len(c.Syscalls), c.Privilege,
			privilege.Reduction(s.Seccomp(), c.Privilege))
		if s.Phased {
			fmt.Fprintf(w, "  %8d  %9d  %8.2f%%", len(c.Serving), c.ServingPrivilege,
				privilege.Reduction(s.Seccomp(), c.ServingPrivilege))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nP_A        %d  (%s)\n", s.App(), s.Compartments[s.Most].Name)
	fmt.Fprintf(w, "P_seccomp  %d\n", s.Seccomp())
	fmt.Fprintf(w, "reduction  %.2f%%  (P_seccomp - P_A) / P_seccomp\n", s.Reduction())
	if !s.Phased {
		return
	}
	fmt.Fprintf(w, "\nP_A serving        %d  (%s)\n", s.AppServing(), s.Compartments[s.MostServing].Name)
	fmt.Fprintf(w, "P_seccomp serving  %d  (the union's serving set: a whole-process filter narrowed by phase)\n",
		s.SeccompServing())
	fmt.Fprintf(w, "serving reduction  %.2f%%  (P_seccomp - P_A serving) / P_seccomp\n", s.ServingReduction())
	fmt.Fprintf(w, "phased reduction   %.2f%%  (P_seccomp serving - P_A serving) / P_seccomp serving\n",
		s.PhasedReduction())
}

// scoreJSON is a score for machines.
type scoreJSON struct {
	Source         string            `json:"source"`
	Format         string            `json:"format"`
	WholeProcess   bool              `json:"whole_process"`
	Ranking        string            `json:"ranking"`
	ServingFrom    []string          `json:"serving_from,omitempty"`
	Compartments   []compartmentJSON `json:"compartments"`
	Union          compartmentJSON   `json:"union"`
	App            int               `json:"application_privilege"`
	MostPrivileged string            `json:"most_privileged"`
	Seccomp        int               `json:"seccomp_privilege"`
	Reduction      float64           `json:"reduction_percent"`
	// Serving is the serving phase's figures, in a file with phases.
	Serving *servingScoreJSON `json:"serving,omitempty"`
}

type compartmentJSON struct {
	Name      string   `json:"name"`
	Path      string   `json:"path,omitempty"`
	BuildID   string   `json:"build_id,omitempty"`
	Syscalls  []string `json:"syscalls"`
	Privilege int      `json:"privilege"`
	Reduction float64  `json:"reduction_percent"`
	// Serving is the compartment's serving phase, in a file with
	// phases; its reduction is against P_seccomp, as Reduction is.
	Serving *phaseJSON `json:"serving,omitempty"`
}

type phaseJSON struct {
	Syscalls  []string `json:"syscalls"`
	Privilege int      `json:"privilege"`
	Reduction float64  `json:"reduction_percent"`
}

// servingScoreJSON is the application's figures in the serving phase.
type servingScoreJSON struct {
	App             int     `json:"application_privilege"`
	MostPrivileged  string  `json:"most_privileged"`
	Seccomp         int     `json:"seccomp_privilege"`
	Reduction       float64 `json:"reduction_percent"`
	PhasedReduction float64 `json:"phased_reduction_percent"`
}

func writeScoreJSON(w io.Writer, a *privilege.Allowlists, s privilege.Score, rankingName string) error {
	out := scoreJSON{
		Source:         a.Source,
		Format:         a.Format.String(),
		WholeProcess:   a.WholeProcess,
		Ranking:        rankingName,
		ServingFrom:    a.ServingFrom,
		Union:          compartmentOf(s.Union, s),
		App:            s.App(),
		MostPrivileged: s.Compartments[s.Most].Name,
		Seccomp:        s.Seccomp(),
		Reduction:      s.Reduction(),
	}
	for _, c := range s.Compartments {
		out.Compartments = append(out.Compartments, compartmentOf(c, s))
	}
	if s.Phased {
		out.Serving = &servingScoreJSON{
			App:             s.AppServing(),
			MostPrivileged:  s.Compartments[s.MostServing].Name,
			Seccomp:         s.SeccompServing(),
			Reduction:       s.ServingReduction(),
			PhasedReduction: s.PhasedReduction(),
		}
	}
	return writeJSON(w, out)
}

func compartmentOf(c privilege.Scored, s privilege.Score) compartmentJSON {
	out := compartmentJSON{
		Name:      c.Name,
		Path:      c.Path,
		BuildID:   c.BuildID,
		Syscalls:  append([]string{}, c.Syscalls...), // [] rather than null
		Privilege: c.Privilege,
		Reduction: privilege.Reduction(s.Seccomp(), c.Privilege),
	}
	if s.Phased {
		out.Serving = &phaseJSON{
			Syscalls:  append([]string{}, c.Serving...),
			Privilege: c.ServingPrivilege,
			Reduction: privilege.Reduction(s.Seccomp(), c.ServingPrivilege),
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeChart draws a chart into the file at path.
func writeChart(path string, chart plot.Bars) error {
	svg, err := chart.SVG()
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}
