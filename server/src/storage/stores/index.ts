import type { Executor } from './executor.js';
import { BotStore } from './bots.js';
import { ContainerStore } from './containers.js';
import { EventStore } from './events.js';
import { MessageStore } from './messages.js';
import { OrganizationStore } from './organizations.js';
import { TaskStore } from './tasks.js';
import { UserStore } from './users.js';

/**
 * Every store, bound to one executor (the database or an open transaction). Stores are created on
 * first use, so binding a transaction costs nothing for the stores it does not touch.
 */
export class Stores {
  #orgs?: OrganizationStore;
  #users?: UserStore;
  #containers?: ContainerStore;
  #messages?: MessageStore;
  #tasks?: TaskStore;
  #bots?: BotStore;
  #events?: EventStore;

  constructor(readonly db: Executor) {}

  get orgs(): OrganizationStore {
    return (this.#orgs ??= new OrganizationStore(this.db));
  }
  get users(): UserStore {
    return (this.#users ??= new UserStore(this.db));
  }
  get containers(): ContainerStore {
    return (this.#containers ??= new ContainerStore(this.db));
  }
  get messages(): MessageStore {
    return (this.#messages ??= new MessageStore(this.db));
  }
  get tasks(): TaskStore {
    return (this.#tasks ??= new TaskStore(this.db));
  }
  get bots(): BotStore {
    return (this.#bots ??= new BotStore(this.db));
  }
  get events(): EventStore {
    return (this.#events ??= new EventStore(this.db));
  }
}
