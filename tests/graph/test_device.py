"""Devices and streams: defaults, new streams, the stream context, GPU availability."""

import threading

import pytest

import nuvec as mx


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="a GPU is the default where present")
def test_default_device_is_cpu_here():
    assert mx.default_device() == mx.Device(mx.cpu)
    assert mx.default_device() == mx.cpu
    assert mx.is_available(mx.cpu)


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="a GPU is available")
def test_gpu_is_unavailable_without_a_gpu_backend():
    assert not mx.is_available(mx.gpu)
    with pytest.raises(RuntimeError, match="gpu device is not available"):
        mx.set_default_device(mx.gpu)
    with pytest.raises(RuntimeError, match="gpu device is not available"):
        mx.add(mx.array(1), mx.array(2), stream=mx.gpu)
    assert mx.default_device() == mx.cpu


def test_streams_are_distinct_and_default_streams_stable():
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    assert s1 != s2 and s1.device == mx.cpu
    assert mx.default_stream(mx.cpu) == mx.default_stream(mx.Device(mx.cpu, 0))
    assert "Stream(" in repr(s1)


def test_stream_context_sets_default_per_thread_and_restores():
    s = mx.new_stream(mx.cpu)
    seen = {}
    with mx.stream(s):
        assert mx.exp(mx.array(1.0)).stream == s

        def other_thread():
            seen["stream"] = mx.exp(mx.array(1.0)).stream

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen["stream"] == mx.default_stream(mx.cpu)
    assert mx.exp(mx.array(1.0)).stream == mx.default_stream(mx.cpu)


def test_default_stream_follows_the_stream_context():
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):  # as MLX: the block's stream is its device's default stream
        assert mx.default_stream(mx.cpu) == s and mx.default_stream(mx.Device(mx.cpu, 0)) == s
        assert mx.exp(mx.array(1.0), stream=mx.cpu).stream == s
        with mx.stream(mx.cpu) as inner:
            assert inner == s
    assert mx.default_stream(mx.cpu) != s
    assert mx.exp(mx.array(1.0)).stream == mx.default_stream(mx.cpu)


def test_stream_keyword_accepts_stream_device_and_device_type():
    s = mx.new_stream(mx.cpu)
    x = mx.array([1.0])
    assert mx.exp(x, stream=s).stream == s
    assert mx.exp(x, stream=mx.cpu).stream == mx.default_stream(mx.cpu)
    assert mx.exp(x, stream=mx.Device(mx.cpu)).stream == mx.default_stream(mx.cpu)
    with pytest.raises(TypeError, match="stream must be"):
        mx.exp(x, stream="cpu")


def test_thread_local_stream_gives_each_thread_its_own_stream():
    shared = mx.new_thread_local_stream(mx.cpu)
    assert repr(shared).startswith("ThreadLocalStream(Device(cpu, 0), ")
    seen = []

    def record():
        with mx.stream(shared):
            first = mx.exp(mx.array(1.0)).stream
        seen.append((first, mx.add(1, 2, stream=shared).stream))

    threads = [threading.Thread(target=record) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a == b for a, b in seen)  # one stream per thread, kept
    assert seen[0][0] != seen[1][0] and mx.add(1, 2, stream=shared).stream not in seen[0]
    unsafe = mx.new_thread_unsafe_stream(mx.cpu)
    assert unsafe != mx.default_stream(mx.cpu) and mx.add(1, 2, stream=unsafe).item() == 3


def test_stream_context_is_a_reusable_class():
    s = mx.new_stream(mx.cpu)
    context = mx.StreamContext(s)
    assert isinstance(mx.stream(s), mx.StreamContext)
    with context as entered:
        assert entered == s and mx.add(1, 2).stream == s
        with context:  # nested re-entry restores the outer scope on exit
            assert mx.add(1, 2).stream == s
        assert mx.add(1, 2).stream == s
    assert mx.add(1, 2).stream == mx.default_stream(mx.cpu)
    with pytest.raises(TypeError, match="^StreamContext: stream must be a Stream"):
        mx.StreamContext("cpu")


def test_memory_limit_and_buffer_sizes():
    old = mx.set_memory_limit(1 << 30)
    try:
        assert mx.get_memory_limit() == 1 << 30
    finally:
        mx.set_memory_limit(old)
    a = mx.arange(10.0)
    view, b = a[2:5], mx.arange(3, dtype=mx.float16)
    mx.eval(a, view, b)
    assert mx.get_array_buffer_size(a) == 40
    assert mx.get_array_buffer_size(a, view, a) == 40  # one buffer behind all three
    assert mx.get_array_buffer_size([a, {"b": b}], "ignored") == 46
    with pytest.raises(ValueError, match="^get_array_buffer_size: arrays must be evaluated"):
        mx.get_array_buffer_size(a + 1)


def test_set_default_device_cpu():
    mx.set_default_device(mx.cpu)
    assert mx.default_device() == mx.cpu
    mx.synchronize(mx.default_stream(mx.cpu))


def test_set_default_stream():
    before = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    try:
        mx.set_default_stream(s)
        assert mx.default_stream(mx.cpu) == s
        assert mx.exp(mx.array(1.0)).stream == s
    finally:
        mx.set_default_stream(before)
    assert mx.exp(mx.array(1.0)).stream == before
    with pytest.raises(TypeError, match="^set_default_stream: "):
        mx.set_default_stream(mx.cpu)


def test_clear_streams_destroys_this_thread_s_streams():
    default = mx.default_stream(mx.cpu)
    made, local = mx.new_stream(mx.cpu), mx.new_thread_local_stream(mx.cpu)
    unsafe = mx.new_thread_unsafe_stream(mx.cpu)
    pending = mx.add(1, 2, stream=made)
    assert mx.add(1, 2, stream=local).item() == 3
    kept = {}

    def other_thread():
        kept["stream"] = mx.new_stream(mx.cpu)
        mx.clear_streams()  # this thread's streams only
        kept["own"] = kept["stream"].cleared

    thread = threading.Thread(target=other_thread)
    keeper = mx.new_stream(mx.cpu)
    thread.start()
    thread.join()
    assert kept["own"] and not keeper.cleared
    with pytest.raises(RuntimeError, match=r"^add: Stream\(Device\(cpu, 0\), \d+\) was "
                                           "destroyed by clear_streams"):
        mx.add(1, 2, stream=kept["stream"])
    mx.clear_streams()
    for s in (made, local):
        with pytest.raises(RuntimeError, match="^add: .* was destroyed by clear_streams"):
            mx.add(1, 2, stream=s)
    with pytest.raises(RuntimeError, match="^stream: .* was destroyed by clear_streams"):
        mx.stream(made)
    with pytest.raises(RuntimeError, match="^set_default_stream: .* was destroyed"):
        mx.set_default_stream(made)
    assert pending.item() == 3  # recorded before: still evaluates
    assert mx.add(1, 2, stream=unsafe).item() == 3  # MLX keeps thread-unsafe streams
    assert mx.default_stream(mx.cpu) == default and mx.add(1, 2).stream == default


def test_clear_streams_replaces_a_destroyed_default_stream():
    old = mx.default_stream(mx.cpu)
    try:
        mine = mx.new_stream(mx.cpu)
        mx.set_default_stream(mine)
        with mx.stream(mine):
            mx.clear_streams()
            with pytest.raises(RuntimeError, match="^add: .* was destroyed by clear_streams"):
                mx.add(1, 2)
        fresh = mx.default_stream(mx.cpu)
        assert fresh not in (mine, old) and not fresh.cleared
        assert mx.add(1, 2).item() == 3 and mx.add(1, 2).stream == fresh
    finally:
        mx.set_default_stream(old)


@pytest.mark.parametrize("name", [
    "default_stream", "new_stream", "new_thread_local_stream", "new_thread_unsafe_stream",
    "set_default_device", "device_info",
])
def test_device_functions_name_themselves_for_a_non_device(name):
    with pytest.raises(TypeError, match=rf"^{name}: device must be a Device or DeviceType, "
                                        r"got 'cpu' \(str\)"):
        getattr(mx, name)("cpu")


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="a GPU is available")
@pytest.mark.parametrize("call, name", [
    (lambda: mx.default_stream(mx.gpu), "default_stream"),
    (lambda: mx.new_stream(mx.gpu), "new_stream"),
    (lambda: mx.new_stream(mx.Device(mx.gpu, 0)), "new_stream"),
    (lambda: mx.new_thread_local_stream(mx.gpu), "new_thread_local_stream"),
    (lambda: mx.new_thread_unsafe_stream(mx.gpu), "new_thread_unsafe_stream"),
    (lambda: mx.set_default_device(mx.gpu), "set_default_device"),
    (lambda: mx.device_info(mx.gpu), "device_info"),
    (lambda: mx.stream(mx.gpu), "stream"),
    (lambda: mx.add(1, 2, stream=mx.gpu), "add"),
    (lambda: mx.ones((2,), stream=mx.Device(mx.gpu, 0)), "ones"),
])
def test_an_unavailable_gpu_is_refused_alike_everywhere(call, name):
    # MLX raises ValueError for a GPU stream or device without a GPU backend; nuvec's error is
    # both that and the RuntimeError it always raised
    with pytest.raises(ValueError, match=rf"^{name}: the gpu device is not available") as info:
        call()
    assert isinstance(info.value, RuntimeError)
    assert mx.default_device() == mx.cpu
