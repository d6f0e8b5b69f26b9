import { Module } from '@nestjs/common';
import { DependencyHistoryController } from './dependency-history.controller';
import { DependencyHistoryService } from './dependency-history.service';
import { DependencyViewController } from './dependency-view.controller';
import { DependencyViewService } from './dependency-view.service';
import { ReportsController } from './reports.controller';
import { ReportsService } from './reports.service';
import { ReportMerger } from './report-merger';
import { RetriesController } from './retries.controller';
import { RetryBatchService } from './retry-batch.service';
import { RetryController } from './retry.controller';
import { RetryService } from './retry.service';

/** Retry decisions against the budget, outcome reports, and the dependency's combined view and history. */
@Module({
  controllers: [
    RetryController,
    RetriesController,
    ReportsController,
    DependencyViewController,
    DependencyHistoryController,
  ],
  providers: [
    RetryService,
    RetryBatchService,
    ReportsService,
    ReportMerger,
    DependencyViewService,
    DependencyHistoryService,
  ],
})
export class BudgetsModule {}
