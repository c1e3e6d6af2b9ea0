package bench

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Run is a benchmark's run: setup, measure, then the report printed on stdout. The setup's
// cleanups (its Close) run at the end, also when SIGINT or SIGTERM cancels the context, so that
// an interrupted benchmark leaves no service running and no database behind. It returns the
// error, or the missed targets (Report.Err).
func Run[E interface{ Close() }, R any](setup func(context.Context) (E, error),
	measure func(context.Context, E) (R, error), report func(E, R) *Report) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := setup(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	res, err := measure(ctx, env)
	if err != nil {
		return err
	}
	r := report(env, res)
	r.Print(os.Stdout)
	return r.Err()
}
