//go:build !race

package nvme_test

const raceEnabled = false
