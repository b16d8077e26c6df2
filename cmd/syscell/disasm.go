package main

import (
	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bpf"
)

func disasmCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "disasm FILE",
		Short: "Disassemble a raw seccomp program",
		Long: `Disassemble a raw seccomp program (an array of struct sock_filter, as
syscell compile or libseccomp's seccomp_export_bpf writes it), one
instruction a line with absolute jump targets and the seccomp_data field
each load reads. The program is shown as it is, even one the kernel would
refuse.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, _, err := readInput(args[0])
			if err != nil {
				return err
			}
			prog, err := decodeProgram(args[0], data)
			if err != nil {
				return err
			}
			return write(cmd.OutOrStdout(), []byte(bpf.Disassemble(prog)))
		},
	}
}
