//go:build !race

package ahci

const raceEnabled = false
