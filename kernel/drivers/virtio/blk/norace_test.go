//go:build !race

package blk

const raceEnabled = false
