// The model: each family of two table names is a versioned register.
//
// A family is a pair of names that a rename moves a table between; names of
// different families never interact, so Porcupine checks each family on its
// own (the model's Partition). The state of a family is, for each of its two
// names, whether a live table holds it, its table id and version, and the
// highest version the name has shown (a name's versions never repeat).
package main

import (
	"fmt"
)

// Unknown marks a table id or version that an operation of unknown outcome
// may have set; the next observation (a read, a conflict, an ack) fixes it.
const Unknown = -1

// Slot is one name of a family.
type Slot struct {
	Present bool
	ID      int64
	Version int64
}

// State is one family: its two names and the highest version each showed.
type State struct {
	Names [2]Slot
	Floor [2]int64
}

// Input is what a client asked.
type Input struct {
	Op       string // create, alter, rename, drop, read
	Family   int
	Name     int   // 0 or 1: the name in the family (rename: the source)
	Expected int64 // expected_version; Unknown when none
}

// Output is what it got back.
type Output struct {
	Outcome string // ok, rejected, unknown
	Error   string // the rejection's type (VersionConflict, NameTaken, TableNotFound, ...)
	ID      int64  // ok: the table id the change touched
	Version int64  // ok: the version it took; VersionConflict: the current version
	Read    [2]Slot
}

func matches(held, seen int64) bool { return held == Unknown || held == seen }

func (s State) with(n int, slot Slot) State {
	s.Names[n] = slot
	if slot.Present && slot.Version != Unknown && slot.Version > s.Floor[n] {
		s.Floor[n] = slot.Version
	}
	return s
}

// step gives every state the operation may leave, none when it cannot happen in `s`.
func step(s State, in Input, out Output) []State {
	n := in.Name
	cur := s.Names[n]
	switch out.Outcome {
	case "unknown":
		return unknownStep(s, in)
	case "rejected":
		return rejectedStep(s, in, out)
	}
	switch in.Op {
	case "read":
		for i := 0; i < 2; i++ {
			held, seen := s.Names[i], out.Read[i]
			if held.Present != seen.Present {
				return nil
			}
			if seen.Present && !(matches(held.ID, seen.ID) && matches(held.Version, seen.Version)) {
				return nil
			}
			s = s.with(i, seen)
		}
		return []State{s}
	case "create":
		if cur.Present || out.Version <= s.Floor[n] {
			return nil
		}
		return []State{s.with(n, Slot{true, out.ID, out.Version})}
	case "alter":
		if !cur.Present || !matches(cur.Version, in.Expected) || !matches(cur.ID, out.ID) ||
			out.Version != in.Expected+1 {
			return nil
		}
		return []State{s.with(n, Slot{true, out.ID, out.Version})}
	case "drop":
		if !cur.Present || !matches(cur.Version, in.Expected) || !matches(cur.ID, out.ID) {
			return nil
		}
		return []State{s.with(n, Slot{})}
	case "rename":
		m := 1 - n
		if !cur.Present || s.Names[m].Present || !matches(cur.Version, in.Expected) ||
			!matches(cur.ID, out.ID) || out.Version <= in.Expected || out.Version <= s.Floor[m] {
			return nil
		}
		return []State{s.with(n, Slot{}).with(m, Slot{true, out.ID, out.Version})}
	}
	return nil
}

// rejectedStep: a typed rejection wrote nothing, and its reason must hold in `s`.
func rejectedStep(s State, in Input, out Output) []State {
	cur := s.Names[in.Name]
	switch out.Error {
	case "NameTaken":
		target := in.Name
		if in.Op == "rename" {
			target = 1 - in.Name
		}
		if !s.Names[target].Present {
			return nil
		}
	case "TableNotFound":
		if cur.Present {
			return nil
		}
	case "VersionConflict":
		if !cur.Present || in.Expected == out.Version || !matches(cur.Version, out.Version) {
			return nil
		}
		s = s.with(in.Name, Slot{true, cur.ID, out.Version})
	default:
		// Any other rejection (InternalError, a limit) is a definite no-op: it
		// constrains nothing, as a failed operation in Jepsen's histories.
	}
	return []State{s}
}

// unknownStep: an operation that may have taken effect. If Porcupine places it
// before other operations it took effect there, with the effect its
// preconditions give; "never happened" is the same as taking effect after
// everything else (its Return is the end of the history).
func unknownStep(s State, in Input) []State {
	n := in.Name
	cur := s.Names[n]
	unknownVersion := Slot{true, cur.ID, Unknown}
	switch in.Op {
	case "read":
		return []State{s}
	case "create":
		if cur.Present {
			return []State{s}
		}
		return []State{s.with(n, Slot{true, Unknown, Unknown})}
	case "alter", "drop", "rename":
		if !cur.Present || (in.Op == "rename" && s.Names[1-n].Present) {
			return []State{s}
		}
		var applied State
		switch in.Op {
		case "alter":
			applied = s.with(n, Slot{true, cur.ID, in.Expected + 1})
		case "drop":
			applied = s.with(n, Slot{})
		default:
			applied = s.with(n, Slot{}).with(1-n, unknownVersion)
		}
		if cur.Version == Unknown {
			// A version we do not know may or may not have matched.
			notApplied := s
			return []State{applied, notApplied}
		}
		if cur.Version == in.Expected {
			return []State{applied}
		}
		return []State{s}
	}
	return nil
}

func describeSlot(name string, slot Slot) string {
	if !slot.Present {
		return name + ": -"
	}
	v := func(x int64) string {
		if x == Unknown {
			return "?"
		}
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%s: id %s v%s", name, v(slot.ID), v(slot.Version))
}
