package store

// SweepSQL and ExpiredAt are sweepSQL and expiredAt for the tests of package store_test.
var (
	SweepSQL  = sweepSQL
	ExpiredAt = expiredAt
)
