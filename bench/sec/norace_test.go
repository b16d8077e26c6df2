//go:build !race

package sec_test

// raceEnabled reports a build with the race detector, whose runtime needs
// futex(2) in a filtered child.
const raceEnabled = false
