//go:build !chorus_agent

package main

import "testing"

// The longest end-to-end tests are declared here, in the file go test reads
// last, shortest to longest, each as t.Parallel and its body (in the file
// of its subject): go test starts a package's parallel tests, once its
// serial ones have ended, in reverse order of declaration (after the first
// one; testing's barrier wakes its waiters last first, Go 1.26), -parallel
// at a time, so these start first, longest first, instead of last, where
// the 26 s browser test started 18 s into the parallel phase and was the
// package's tail (issue 15). The order is a matter of speed only: each test
// is independent of the others and of when it starts.
//
// A test whose time (a run's TEST_JSON, scripts/test.sh) grows past the
// shortest here belongs here too, in its place by time.

func TestUpIsolationE2E(t *testing.T) {
	t.Parallel()
	testUpIsolationE2E(t)
}

func TestBridgeE2E(t *testing.T) {
	t.Parallel()
	testBridgeE2E(t)
}

func TestFleetOnANetworkE2E(t *testing.T) {
	t.Parallel()
	testFleetOnANetworkE2E(t)
}

func TestFleetOVOSSkillE2E(t *testing.T) {
	t.Parallel()
	testFleetOVOSSkillE2E(t)
}

func TestFaultsRevokedWillCleared(t *testing.T) {
	t.Parallel()
	testFaultsRevokedWillCleared(t)
}

func TestFaultsPartitionConverges(t *testing.T) {
	t.Parallel()
	testFaultsPartitionConverges(t)
}

func TestDashboardBrowserE2E(t *testing.T) {
	t.Parallel()
	testDashboardBrowserE2E(t)
}
