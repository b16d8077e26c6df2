// Package unwind walks the call stack of a stopped x86_64 thread from its
// registers and a copy of its stack, with the call frame information (CFI)
// of each object's .eh_frame, as debuggers and perf --call-graph dwarf do.
// Frame pointers are not needed: Debian's libc has none, and an -O2 program
// keeps none either.
//
// A Table holds one object's CFI (Load reads it from an ELF file or from an
// image in memory, such as the vDSO); Table.Row interprets the CFI program
// that covers an address into the rules that recover the caller's registers.
// A Cursor applies those rules frame by frame, reading registers and memory
// only when a rule needs them, and records each value it read as an Input:
// two stacks whose inputs are equal unwind alike, which is what makes an
// unwind cacheable (see Cursor.Inputs). A Cache keeps one Table per object.
//
// Addresses inside a Table are the object's link-time virtual addresses;
// the Finder that hands tables to a Cursor also gives the bias that turns
// them into run-time addresses.
package unwind
