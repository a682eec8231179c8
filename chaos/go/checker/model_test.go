package main

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func op(client int, in Input, out Output, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

var families = [][2]string{{"a", "b"}}

func create(name int) Input { return Input{Op: "create", Name: name, Expected: Unknown} }
func alter(v int64) Input   { return Input{Op: "alter", Expected: v} }
func read() Input           { return Input{Op: "read", Expected: Unknown} }
func ok(id, v int64) Output { return Output{Outcome: "ok", ID: id, Version: v} }
func saw(id, v int64) Output {
	return Output{Outcome: "ok", Read: [2]Slot{{true, id, v}, {}}}
}

func TestTwoConcurrentAltersAtOneVersionCannotBothCommit(t *testing.T) {
	history := []porcupine.Operation{
		op(0, create(0), ok(7, 1), 0, 10),
		op(1, alter(1), ok(7, 2), 20, 40),
		op(2, alter(1), ok(7, 2), 21, 41),
	}
	if porcupine.CheckOperations(model(families), history) {
		t.Fatal("two writes conditioned on v1 both committed, and the checker said ok")
	}
}

func TestAReadAfterAnAckedWriteMustSeeIt(t *testing.T) {
	stale := []porcupine.Operation{
		op(0, create(0), ok(7, 1), 0, 10),
		op(0, alter(1), ok(7, 2), 20, 30),
		op(1, read(), saw(7, 1), 31, 40),
	}
	if porcupine.CheckOperations(model(families), stale) {
		t.Fatal("a stale read passed")
	}
	concurrent := []porcupine.Operation{
		op(0, create(0), ok(7, 1), 0, 10),
		op(0, alter(1), ok(7, 2), 20, 30),
		op(1, read(), saw(7, 1), 25, 40), // began before the ack: either is fine
	}
	if !porcupine.CheckOperations(model(families), concurrent) {
		t.Fatal("a read concurrent with a write was refused")
	}
}

func TestAnUnknownWriteMayTakeEffectLateOrNever(t *testing.T) {
	unknown := Output{Outcome: "unknown"}
	history := []porcupine.Operation{
		op(0, create(0), ok(7, 1), 0, 10),
		op(1, alter(1), unknown, 20, 1000),
		op(2, read(), saw(7, 1), 30, 40),
		op(2, read(), saw(7, 2), 50, 60),
		op(3, alter(1), Output{Outcome: "rejected", Error: "VersionConflict", Version: 2}, 70, 80),
	}
	if !porcupine.CheckOperations(model(families), history) {
		t.Fatal("an unknown write that took effect late was refused")
	}
	never := []porcupine.Operation{
		op(0, create(0), ok(7, 1), 0, 10),
		op(1, alter(1), unknown, 20, 1000),
		op(2, read(), saw(7, 1), 30, 40),
		op(2, read(), saw(7, 1), 50, 60),
	}
	if !porcupine.CheckOperations(model(families), never) {
		t.Fatal("an unknown write that never happened was refused")
	}
}

func TestARenameMovesTheTableAndItsVersionsGoOnPerName(t *testing.T) {
	rename := Input{Op: "rename", Name: 0, Expected: 1}
	history := []porcupine.Operation{
		op(0, create(1), ok(3, 1), 0, 5),
		op(0, Input{Op: "drop", Name: 1, Expected: 1}, ok(3, 2), 6, 8),
		op(0, create(0), ok(7, 1), 10, 20),
		op(0, rename, ok(7, 3), 30, 40),
		op(1, read(), Output{Outcome: "ok", Read: [2]Slot{{}, {true, 7, 3}}}, 41, 50),
	}
	if !porcupine.CheckOperations(model(families), history) {
		t.Fatal("a legal rename was refused")
	}
	history[3] = op(0, rename, ok(7, 1), 30, 40) // b showed v1 already: a repeat
	if porcupine.CheckOperations(model(families), history) {
		t.Fatal("a rename that repeated a version of its new name passed")
	}
}
