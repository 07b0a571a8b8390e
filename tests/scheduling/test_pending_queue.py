"""The shape-grouped pending queue: queue order across groups, and when a group stops being blocked."""

from __future__ import annotations

import numpy as np

from batsim_google.scheduling.queue import PendingQueue
from batsim_google.scheduling.tasks import JobRequest, Task


def queued(number: int, priority: float, cpu: float, memory: float) -> Task:
    task = Task(JobRequest(f"w0!{number}", float(number), "task", priority, cpu, memory), f"w0!{number}")
    task.queue_key = (-priority, float(number), number)
    task.level = priority
    return task


def test_tasks_iterate_in_queue_order_across_shape_groups():
    rng = np.random.default_rng(3)
    queue = PendingQueue()
    tasks = [queued(i, float(rng.choice([0.2, 0.5, 0.9])), float(rng.choice([0.1, 0.3])), 0.1) for i in range(60)]
    for task in tasks:
        queue.add(task)
    assert len(queue) == 60 and len(queue.groups) == 2
    assert list(queue) == sorted(tasks, key=lambda task: task.queue_key)
    assert queue.count.tolist() == [len(group.tasks) for group in queue.groups]


def test_only_a_new_head_unblocks_its_group_and_removal_keeps_the_block():
    queue = PendingQueue()
    first = queued(1, 0.5, 0.3, 0.3)
    queue.add(first)
    queue.blocked[0] = True
    queue.add(queued(2, 0.4, 0.3, 0.3))  # behind the head: fits no better
    assert queue.blocked[0]
    higher = queued(3, 0.9, 0.3, 0.3)  # a new head may evict more
    queue.add(higher)
    assert not queue.blocked[0] and queue.level[0] == 0.9
    queue.blocked[0] = True
    assert queue.remove(higher) and queue.blocked[0] and queue.level[0] == 0.5
    assert not queue.remove(higher)
    assert queue.remove(first) and len(queue) == 1 and queue.nonempty().tolist() == [True]
