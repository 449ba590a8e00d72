import type { Executor } from './executor.js';
import type { PgLookupBatches } from '../pg-batches.js';
import { BookmarkStore } from './bookmarks.js';
import { BotDataStore } from './bot-data.js';
import { BotStore } from './bots.js';
import { CommandStore } from './commands.js';
import { ContainerStore } from './containers.js';
import { DeliveryStore } from './deliveries.js';
import { DirectoryStore } from './directory.js';
import { EventStore } from './events.js';
import { FileStore } from './files.js';
import { IdempotencyStore } from './idempotency.js';
import { IncomingTokenStore } from './incoming-tokens.js';
import { IncomingWebhookStore } from './incoming-webhooks.js';
import { MessageStore } from './messages.js';
import { NotificationStore } from './notifications.js';
import { OrganizationStore } from './organizations.js';
import { PendingActionStore } from './pending-actions.js';
import { KeyRecentTextStore } from './key-recent-texts.js';
import { QuotaStore } from './quotas.js';
import { ScheduledJobStore } from './scheduled-jobs.js';
import { SigningKeyStore } from './signing-keys.js';
import { ReadMarkerStore } from './read-markers.js';
import { ReactionStore } from './reactions.js';
import { TaskStore } from './tasks.js';
import { ToolCallStore } from './tool-calls.js';
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
  #toolCalls?: ToolCallStore;
  #commands?: CommandStore;
  #bookmarks?: BookmarkStore;
  #files?: FileStore;
  #directory?: DirectoryStore;
  #idempotency?: IdempotencyStore;
  #incomingTokens?: IncomingTokenStore;
  #incomingWebhooks?: IncomingWebhookStore;
  #signingKeys?: SigningKeyStore;
  #deliveries?: DeliveryStore;
  #notifications?: NotificationStore;
  #scheduledJobs?: ScheduledJobStore;
  #botData?: BotDataStore;
  #readMarkers?: ReadMarkerStore;
  #quotas?: QuotaStore;
  #reactions?: ReactionStore;
  #pendingActions?: PendingActionStore;
  #keyRecentTexts?: KeyRecentTextStore;

  constructor(
    readonly db: Executor,
    /** The database's lookup batching (PostgreSQL; never a transaction's stores): pg-batches.ts. */
    private readonly lookups?: PgLookupBatches,
  ) {}

  get reactions(): ReactionStore {
    return (this.#reactions ??= new ReactionStore(this.db));
  }
  get orgs(): OrganizationStore {
    return (this.#orgs ??= new OrganizationStore(this.db));
  }
  get users(): UserStore {
    return (this.#users ??= new UserStore(this.db, this.lookups));
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
    return (this.#bots ??= new BotStore(this.db, this.lookups));
  }
  get events(): EventStore {
    return (this.#events ??= new EventStore(this.db));
  }
  get toolCalls(): ToolCallStore {
    return (this.#toolCalls ??= new ToolCallStore(this.db));
  }
  get commands(): CommandStore {
    return (this.#commands ??= new CommandStore(this.db));
  }
  get bookmarks(): BookmarkStore {
    return (this.#bookmarks ??= new BookmarkStore(this.db));
  }
  get files(): FileStore {
    return (this.#files ??= new FileStore(this.db));
  }
  get directory(): DirectoryStore {
    return (this.#directory ??= new DirectoryStore(this.db));
  }
  get idempotency(): IdempotencyStore {
    return (this.#idempotency ??= new IdempotencyStore(this.db));
  }
  get incomingTokens(): IncomingTokenStore {
    return (this.#incomingTokens ??= new IncomingTokenStore(this.db));
  }
  get incomingWebhooks(): IncomingWebhookStore {
    return (this.#incomingWebhooks ??= new IncomingWebhookStore(this.db));
  }
  get signingKeys(): SigningKeyStore {
    return (this.#signingKeys ??= new SigningKeyStore(this.db));
  }
  get deliveries(): DeliveryStore {
    return (this.#deliveries ??= new DeliveryStore(this.db));
  }
  get notifications(): NotificationStore {
    return (this.#notifications ??= new NotificationStore(this.db));
  }
  get scheduledJobs(): ScheduledJobStore {
    return (this.#scheduledJobs ??= new ScheduledJobStore(this.db));
  }
  get botData(): BotDataStore {
    return (this.#botData ??= new BotDataStore(this.db));
  }
  get readMarkers(): ReadMarkerStore {
    return (this.#readMarkers ??= new ReadMarkerStore(this.db));
  }
  get quotas(): QuotaStore {
    return (this.#quotas ??= new QuotaStore(this.db));
  }
  get pendingActions(): PendingActionStore {
    return (this.#pendingActions ??= new PendingActionStore(this.db));
  }
  get keyRecentTexts(): KeyRecentTextStore {
    return (this.#keyRecentTexts ??= new KeyRecentTextStore(this.db));
  }
}
