#pragma once
#include "sim/converge/Objectives.hpp"

namespace placesim {

/// A reference value for min f, to report the suboptimality f(x) - f* of a run.
struct MinimumEstimate {
  double value = 0;          ///< the lowest f found
  double gradient_norm = 0;  ///< ||grad f|| at that point: how far from stationary it is
  int iterations = 0;
};

/// Minimizes the full (deterministic) objective from x = 0 with Nesterov's accelerated gradient method, a
/// backtracking estimate of the smoothness and function-value restarts (O'Donoghue & Candes, 2015), for at most
/// `max_iterations` iterations, until ||grad f|| <= tolerance, or until no step decreases f beyond its rounding
/// (||grad f|| then is about sqrt(machine epsilon x |f|)). For the convex objectives of sim/converge/Objectives this
/// approaches min f; a linearly separable logistic regression without l2 has no minimizer (its infimum is 0), so the
/// value found is then only an upper bound, as `gradient_norm` shows. Deterministic.
MinimumEstimate estimate_minimum(const Objective& f, int max_iterations, double tolerance);

}  // namespace placesim
