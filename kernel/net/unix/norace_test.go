//go:build !race

package unix

const raceEnabled = false
