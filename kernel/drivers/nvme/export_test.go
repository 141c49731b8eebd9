package nvme

// FreeSlots is, for each I/O queue, how many command slots are free and
// whether any slot is there twice (for tests of the timeout path).
func FreeSlots(c *Controller) (free []int, duplicate bool) {
	for _, q := range c.io {
		var got []*command
		seen := map[*command]bool{}
	drain:
		for {
			select {
			case cmd := <-q.free:
				duplicate = duplicate || seen[cmd]
				seen[cmd] = true
				got = append(got, cmd)
			default:
				break drain
			}
		}
		for _, cmd := range got {
			q.free <- cmd
		}
		free = append(free, len(got))
	}
	return free, duplicate
}
