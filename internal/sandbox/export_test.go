package sandbox

// The internal test helpers the external tests (package sandbox_test) use:
// those tests may import a service, which this package's own may not.
var (
	InProcess = inprocess
	Create    = create
	WantCode  = wantCode
	As        = as
)
