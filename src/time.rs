//! Time management: clock → move budget.
