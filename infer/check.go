package infer

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/record"
)

// Report compares a recording with the inferred calls, compartment by
// compartment.
type Report struct {
	Compartments []Difference
	// StartUp lists the loader's start-up calls recorded but not
	// inferred.
	StartUp []string
}

// Difference is one compartment's comparison.
type Difference struct {
	// Name is the recorded compartment's name.
	Name string
	// Recorded and Inferred count the calls of each side.
	Recorded, Inferred int
	// Missing are the calls recorded but not inferred: each is a bug of
	// the analysis or of the attribution.
	Missing []string
	// Extra are the calls inferred but not recorded: what a later run
	// may make.
	Extra []string
	// Skipped says why the compartment could not be compared ("" if it
	// was): code in anonymous memory, or an object no longer on disk.
	Skipped string
}

// FalseNegatives counts the calls recorded but not inferred.
func (r *Report) FalseNegatives() int {
	n := len(r.StartUp)
	for _, d := range r.Compartments {
		n += len(d.Missing)
	}
	return n
}

// Compare compares a recording with an inferred one. Compartments match
// by path and build-id (by path alone where the recording has none, as
// syso JSON has not).
func Compare(recorded, inferred *record.Recording) *Report {
	byKey := map[string]*record.Compartment{}
	for _, c := range inferred.Compartments {
		byKey[compartmentKey(c.Name, c.Path, c.BuildID)] = c
		byKey[compartmentKey(c.Name, c.Path, "")] = c
	}
	r := &Report{}
	for _, rc := range recorded.Compartments {
		d := Difference{Name: rc.Name, Recorded: len(rc.Calls)}
		ic := byKey[compartmentKey(rc.Name, rc.Path, rc.BuildID)]
		switch {
		case rc.Name == record.AnonExecName:
			d.Skipped = "code in anonymous memory (JIT), which no analysis of files bounds"
		case ic == nil:
			d.Skipped = "no object of the analysis is this one"
			d.Missing = sortedNames(rc.Calls)
		default:
			d.Inferred = len(ic.Calls)
			d.Missing = minus(rc.Calls, ic.Calls)
			d.Extra = minus(ic.Calls, rc.Calls)
		}
		r.Compartments = append(r.Compartments, d)
	}
	r.StartUp = minus(recorded.StartUp, unionOf(inferred))
	return r
}

// Annotate gives each compartment of a recording its reach (record.
// Compartment.Reach): the calls inferred for the same object (by path and
// build-id, as Compare matches them), which a policy with compartments
// uses to decide in the kernel the calls made from the runtime's code
// that every compartment able to reach them may make.
func Annotate(recorded, inferred *record.Recording) {
	// The reaches hold where the vDSO the inference read does.
	recorded.VDSO = union(recorded.VDSO, inferred.VDSO)
	byKey := map[string]*record.Compartment{}
	for _, c := range inferred.Compartments {
		byKey[compartmentKey(c.Name, c.Path, c.BuildID)] = c
		byKey[compartmentKey(c.Name, c.Path, "")] = c
	}
	for _, rc := range recorded.Compartments {
		if ic := byKey[compartmentKey(rc.Name, rc.Path, rc.BuildID)]; ic != nil && rc.Name != record.AnonExecName {
			rc.Reach = maps.Clone(ic.Reach)
		}
	}
}

// compartmentKey identifies a compartment: by path and build-id, or by
// name for those that are not files.
func compartmentKey(name, path, buildID string) string {
	if path == "" {
		return name
	}
	return path + "\x00" + buildID
}

// unionOf is every call a recording allows: its compartments' and its
// start-up calls.
func unionOf(rec *record.Recording) map[string]uint64 {
	out := maps.Clone(rec.StartUp)
	if out == nil {
		out = map[string]uint64{}
	}
	for _, c := range rec.Compartments {
		maps.Copy(out, c.Calls)
	}
	return out
}

// minus lists the names of a that are not in b.
func minus(a, b map[string]uint64) []string {
	var out []string
	for name := range a {
		if _, ok := b[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func sortedNames(m map[string]uint64) []string { return slices.Sorted(maps.Keys(m)) }

// Write writes the report for people: a line for the whole, one per
// compartment, and every call recorded but not inferred.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "syscell: static bound of %d compartments: %d calls recorded but not inferred\n", len(r.Compartments), r.FalseNegatives())
	for _, d := range r.Compartments {
		switch {
		case d.Skipped != "":
			fmt.Fprintf(w, "  %s: not compared: %s\n", d.Name, d.Skipped)
		default:
			fmt.Fprintf(w, "  %s: %d recorded, %d inferred; %d inferred, not recorded%s\n", d.Name, d.Recorded, d.Inferred, len(d.Extra), listed(d.Extra))
		}
		if len(d.Missing) > 0 && d.Skipped == "" {
			fmt.Fprintf(w, "  NOT INFERRED %s: %s\n", d.Name, strings.Join(d.Missing, " "))
		}
	}
	if len(r.StartUp) > 0 {
		fmt.Fprintf(w, "  NOT INFERRED %s: %s\n", record.StartUpName, strings.Join(r.StartUp, " "))
	}
}

func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, " ")
}

// Bound infers what the program at exe and every program and library a
// recording of it saw can do: the inferred side of a comparison with
// that recording. The executables the recording names (programs it
// executed) are inferred as programs of their own; the libraries no
// inference covers (loaded with dlopen) as dlopened by exe.
func Bound(rec *record.Recording, exe string, opt Options) (*record.Recording, error) {
	programs := []string{exe}
	var libs []string
	for _, c := range rec.Compartments {
		if c.Path == "" || !onDisk(c.Path, c.BuildID) {
			continue
		}
		if IsProgram(c.Path, c.BuildID) {
			programs = append(programs, c.Path)
		} else if _, err := image.OpenDynamic(c.Path); err == nil {
			libs = append(libs, c.Path)
		}
	}
	var results []*record.Recording
	for i, prog := range dedupe(programs) {
		o := opt
		if i == 0 {
			o.Dlopen = append(slices.Clone(opt.Dlopen), libs...)
		}
		res, err := Infer(prog, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", prog, err)
		}
		results = append(results, res.Recording())
	}
	return record.Merge(results...)
}

// onDisk says whether path is still the file a compartment names.
// IsProgram says whether the file at path, of build-id buildID where not
// "", is a dynamically linked program on disk: one the loader starts.
func IsProgram(path, buildID string) bool {
	if !onDisk(path, buildID) {
		return false
	}
	d, err := image.OpenDynamic(path)
	return err == nil && d.Interp != ""
}

func onDisk(path, buildID string) bool {
	id, err := attribute.FileBuildID(path)
	return err == nil && (buildID == "" || id == buildID)
}

func dedupe(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
