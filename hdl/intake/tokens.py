"""Buffer-ID tokens between the engine's pipes (get_buf / rls_buf).

A token is handed on in program order (docs/semantics.md, "Buffer-ID tokens"), whichever
pipe reaches its get_buf first, as a ticket lock: the dispatcher, which sees the commands
in program order, gives the k-th get_buf of an id ticket k (`TokenTickets`), and the
token table (`TokenTable`) grants a get_buf once its id's releases number its ticket.
Tickets count modulo 2^TICKET_BITS. The tickets of one id not yet served are those of
get_bufs waiting in the pipes' command queues, and of the one granted, whose rls_buf
then waits in a queue, so they number at most the queues' entries: `TokenTickets`
refuses a depth at which they could reach 2^TICKET_BITS.
"""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from model.isa import BUF_ID_BITS

from ..lib.register_copy import RegisterCopy

TICKET_BITS = 5
BUF_IDS = 1 << BUF_ID_BITS


class TokenGetSignature(wiring.Signature):
    """A pipe's get_buf port (Out from the pipe): `valid` is held, with the same `buf_id`
    and `ticket`, until `granted`, which is high for one cycle, the cycle after the grant;
    the pipe drops `valid` after it."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "buf_id": Out(BUF_ID_BITS),
            "ticket": Out(TICKET_BITS),
            "granted": In(1),
        })


class TokenReleaseSignature(wiring.Signature):
    """A pipe's rls_buf port (Out from the pipe): `valid` is held until `released`, and
    low on the cycle `released` is high (one cycle, the cycle after the release)."""
    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "buf_id": Out(BUF_ID_BITS),
            "released": In(1),
        })


class TokenTickets(wiring.Component):
    """The next ticket of each id, for the dispatcher: `ticket` is `buf_id`'s next one,
    and a cycle with `take` hands it out (the next get_buf of the id gets one more).

    `queued` is how many commands the pipes' queues hold at most together: the tickets
    of one id in use (from the one its releases have reached to the newest) never
    outnumber them, and the table tells them apart while they number 2^TICKET_BITS at
    most."""

    def __init__(self, queued):
        if queued > 1 << TICKET_BITS:
            raise ValueError(f"{queued} queued commands need more than {TICKET_BITS}-bit "
                             f"tickets")
        super().__init__({"take": In(1), "buf_id": In(BUF_ID_BITS),
                          "ticket": Out(TICKET_BITS)})

    def elaborate(self, platform):
        m = Module()
        issued = [Signal(TICKET_BITS, name=f"issued_{i}") for i in range(BUF_IDS)]
        m.d.comb += self.ticket.eq(Array(issued)[self.buf_id])
        # Each id's count steps from itself, enabled by a decode of `buf_id`: the lookup
        # feeds only the dispatcher's queues, not an adder and a write back into 32
        # counts (at 125 MHz that loop was the FPGA top's worst path).
        for buf_id, count in enumerate(issued):
            with m.If(self.take & (self.buf_id == buf_id)):
                m.d.sync += count.eq(count + 1)
        return m


def _port_name(kind, pipe):
    return f"{kind}_{pipe.name.lower()}"


class TokenTable(wiring.Component):
    """The releases of each token id, counted modulo 2^TICKET_BITS, and one get_buf port
    and one rls_buf port per engine pipe.

    A get_buf is granted when its id's release count equals its ticket. It is decided
    from the table's own registers of the request and of its id's count: a request shown
    at cycle t is decided at t + 2 and shows `granted` at t + 3 at the earliest.
    A grant changes nothing here; the holder's rls_buf adds one to the count, which lets
    the next ticket in. An rls_buf is taken into a register too and counted on the edge
    after: shown at t, counted at the end of t + 1, `released` at t + 2, and a get_buf
    waiting for it decided at t + 2, `granted` at t + 3. Only the holder of a token
    releases it (the parser's rule), so two releases of one id never meet.
    """

    def __init__(self, pipes):
        self._pipes = tuple(pipes)
        members = {}
        for pipe in self._pipes:
            members[_port_name("get", pipe)] = In(TokenGetSignature())
            members[_port_name("rls", pipe)] = In(TokenReleaseSignature())
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        releases = Array(Signal(TICKET_BITS, name=f"releases_{i}") for i in range(BUF_IDS))
        counting = [self._release(m, pipe) for pipe in self._pipes]
        for buf_id in range(BUF_IDS):
            released = 0
            for valid, held_id in counting:
                released = released | (valid & (held_id == buf_id))
            with m.If(released):
                m.d.sync += releases[buf_id].eq(releases[buf_id] + 1)
        for pipe in self._pipes:
            self._grant(m, pipe, releases, counting)
        return m

    def _release(self, m, pipe):
        """The pipe's rls_buf, registered: (it is counted this cycle, its id)."""
        port = getattr(self, _port_name("rls", pipe))
        name = pipe.name.lower()
        held = Signal(name=f"rls_{name}_held")
        held_id = Signal(BUF_ID_BITS, name=f"rls_{name}_held_id")
        answered, answer = self._answer(m, port, "released", name)
        counting = held & ~answered
        m.d.sync += [held.eq(port.valid), held_id.eq(port.buf_id), answered.eq(counting)]
        m.d.comb += answer.eq(counting)
        return counting, held_id

    def _grant(self, m, pipe, releases, counting):
        """The pipe's get_buf, decided two registers behind it: the request is held, its
        id's release count looked up into a register, and the next cycle compares that
        count with the ticket, less the release counted meanwhile. So no lookup of 32
        counts reaches the decision (it was the FPGA top's worst path)."""
        port = getattr(self, _port_name("get", pipe))
        name = pipe.name.lower()
        held_id = Signal(BUF_ID_BITS, name=f"get_{name}_held_id")
        held_ticket = Signal(TICKET_BITS, name=f"get_{name}_held_ticket")
        pending = Signal(name=f"get_{name}_pending")
        armed = Signal(name=f"get_{name}_armed")
        seen = Signal(TICKET_BITS, name=f"get_{name}_seen")
        target = Signal(TICKET_BITS, name=f"get_{name}_target")
        bumped = 0
        for valid, released_id in counting:
            bumped = bumped | (valid & (released_id == held_id))
        granted, answer = self._answer(m, port, "granted", name)
        granting = armed & (seen == target)
        # seen == target on the cycle after the lookup: the count then is the ticket.
        m.d.sync += [held_id.eq(port.buf_id), held_ticket.eq(port.ticket),
                     seen.eq(releases[held_id]), target.eq(held_ticket - bumped),
                     granted.eq(granting),
                     pending.eq(port.valid & ~granting & ~granted),
                     armed.eq(pending & ~granting & ~granted)]
        m.d.comb += answer.eq(granting)

    @staticmethod
    def _answer(m, port, answer, name):
        """The register this block decides with and the input of the `RegisterCopy` of it
        that the port's `answer` shows (placed by the pipe, which it feeds)."""
        copy = m.submodules[f"{answer}_{name}_copy"] = RegisterCopy(1)
        m.d.comb += getattr(port, answer).eq(copy.q)
        return Signal(name=f"{answer}_{name}"), copy.d
