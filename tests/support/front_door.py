"""A real lock for a real HA process: HA's ``template`` lock over an ``input_boolean``.

HA's ``demo`` integration loads every demo platform at once, and its camera needs
``turbojpeg``, which the test environment does not have; a template lock is a lock entity
like any other (``lock.front_door``), unlocked through ``lock.unlock``.
"""

FRONT_DOOR_YAML = """
input_boolean:
  front_door_locked:
    name: Front door locked
    initial: true
template:
  - lock:
      - name: Front Door
        unique_id: companion_test_front_door
        state: "{{ 'locked' if is_state('input_boolean.front_door_locked', 'on') else 'unlocked' }}"
        lock:
          - action: input_boolean.turn_on
            target:
              entity_id: input_boolean.front_door_locked
        unlock:
          - action: input_boolean.turn_off
            target:
              entity_id: input_boolean.front_door_locked
"""
