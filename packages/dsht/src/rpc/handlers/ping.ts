/** PING → PONG: liveness and an RTT sample; the sender contact carries the cluster adverts. */
import type { Response } from '../../wire/messages.js';

export function handlePing(): Response {
  return { type: 'PONG' };
}
