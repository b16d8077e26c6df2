package cell_test

import (
	"cmp"
	"strings"
	"testing"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
)

func TestStaleCompartments(t *testing.T) {
	trueID, err := attribute.FileBuildID("/bin/true")
	if err != nil || trueID == "" {
		t.Fatalf("build-id of /bin/true: %q, %v", trueID, err)
	}
	tests := []struct {
		name string
		c    policy.Compartment
		want string // a part of the problem, "" for none
	}{
		{"as recorded", policy.Compartment{Path: "/bin/true", BuildID: trueID}, ""},
		{"build-id in capitals", policy.Compartment{Path: "/bin/true", BuildID: strings.ToUpper(trueID)}, ""},
		{"path alone", policy.Compartment{Path: "/bin/true"}, ""},
		{"soname alone", policy.Compartment{Name: "libc.so.6"}, ""},
		{"build-id alone", policy.Compartment{BuildID: "00"}, ""},
		{"another build", policy.Compartment{Path: "/bin/true", BuildID: "0123456789abcdef"}, "is another build (build-id " + trueID + ", the policy's 0123456789abcdef)"},
		{"no file", policy.Compartment{Path: "/nonexistent/libgone.so", BuildID: "00"}, "no file at /nonexistent/libgone.so"},
		{"not ELF", policy.Compartment{Path: "/etc/hostname"}, "/etc/hostname: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			c.Name = cmp.Or(c.Name, c.Path, "x")
			c.Pos = policy.Pos{File: "p.toml", Line: 7}
			got := cell.StaleCompartments(&policy.Policy{Compartments: []policy.Compartment{c}})
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("stale: %v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].String(), tt.want) || !strings.HasPrefix(got[0].String(), "p.toml:7: compartment ") {
				t.Fatalf("stale: %v, want one saying %q at p.toml:7", got, tt.want)
			}
		})
	}
}

func TestStaleVDSO(t *testing.T) {
	have, err := attribute.VDSOFunctions()
	if err != nil || len(have) == 0 {
		t.Skipf("SKIPPED: this kernel maps no vDSO with functions: %v", err)
	}
	tests := []struct {
		name   string
		vdso   []string
		want   string // a part of the problem, "" for none
		absent string // a part the problem must not have
	}{
		{"nothing assumed", nil, "", ""},
		{"as this kernel's", have, "", ""},
		{"one this kernel lacks", []string{have[0], "__vdso_gone"}, "p.toml: this kernel's vDSO lacks __vdso_gone, which the policy assumes it exports (vdso)", have[0] + ","},
		{"two, sorted", []string{"__vdso_z", "__vdso_a"}, "lacks __vdso_a, __vdso_z, which", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cell.StaleVDSO(&policy.Policy{VDSO: tt.vdso, Source: "p.toml"})
			if tt.want == "" {
				if got != "" {
					t.Fatalf("problem %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) || tt.absent != "" && strings.Contains(got, tt.absent) {
				t.Fatalf("problem %q, want one saying %q", got, tt.want)
			}
		})
	}
}
