package controller

import "time"

// SetAvailabilitySettle sets the interval of c's availability re-checks
// (availabilitySettle), so tests can watch several pass (tests only).
func SetAvailabilitySettle(c *Controller, d time.Duration) { c.repairs.setInterval(d) }
