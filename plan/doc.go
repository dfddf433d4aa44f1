// Package plan is familiar's plans (issue 39): one goal broken into steps
// with dependencies ("needs"), each step a task of its own, run by
// parallel agents as a graph and integrated through the merge queue.
//
// A plan is written by an architect task (a fenced familiar-plan block in
// its final message: Parse), by the person (plan/create {steps}) or by a
// tasks file (familiar run's needs:). Check says what is wrong with one,
// every problem naming its step and field. Decide is the graph's one
// transition, a pure function of the plan and what its tasks say; the
// Planner owns the plans, their goroutine and their store, and acts on
// Decide's actions through its Host (the orchestrator's internal
// commands: tasks created and cancelled, the merge queue started, merges
// undone). It never touches a task's state itself.
package plan
