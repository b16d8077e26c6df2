// Package x86 reads x86-64 machine code for the static analysis of system
// calls: it decodes one function's bytes (golang.org/x/arch's decoder),
// splits them into basic blocks and runs a small abstract interpretation
// of the general-purpose registers over them, so that each syscall
// instruction and each call comes out with what is known of its
// registers: a set of constants, the value an argument register had when
// the function was entered (or some of its bits), the word at a fixed
// address, or nothing; and with the guard it runs under, if any: a bit
// of an argument a branch above it found set.
//
// Nothing here knows about ELF or libc: the caller says where a function
// starts and ends and which addresses are code, and gets back the
// function's facts (Function). The analysis is sound for what it reports:
// a register it cannot follow is Unknown, and a byte it cannot decode
// makes every register Unknown.
package x86
