//go:build !race

package epoll

const raceEnabled = false
