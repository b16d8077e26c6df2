package infer

import "slices"

func sortedInts(a []int) []int {
	slices.Sort(a)
	return a
}

func sortStrings(a []string) []string {
	slices.Sort(a)
	return slices.Compact(a)
}
