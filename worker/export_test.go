package worker

// CallbacksOf is s's callback URLs by signal name, for the protocol's test vectors, whose
// view of a step holds them all (a Func reads one with Step.CallbackURL).
func CallbacksOf(s Step) map[string]string { return s.callbacks }
